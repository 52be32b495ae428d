"""mamba_ssm's Mamba-3 SISO Triton kernels (`mamba3_siso_combined`) on kernels/mamba3's
problem 1, so that kdiff's gates judge them as they judge ours (kernels/mamba3/upstream.py:
needs a GPU and MAMBA_SSM_SRC)."""
from kdiff.kernels.mamba3.upstream import SequenceCandidate


class ModelNew(SequenceCandidate):
    pass
