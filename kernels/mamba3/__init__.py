"""Mamba-3 SISO (state-spaces/mamba's mamba3 kernels' recurrence): the sequential float64
oracle, its chunked PyTorch form, and Triton kernels verified against them (NOTES.md)."""
from kdiff.kernels.mamba3.chunked import mamba3_siso_chunked
from kdiff.kernels.mamba3.reference import States, mamba3_siso_recurrence

__all__ = ["States", "mamba3_siso_chunked", "mamba3_siso_recurrence"]
