"""mamba_ssm's Mamba-3 SISO decode step (`mamba3_siso_step`) on kernels/mamba3's problem 3
(kernels/mamba3/upstream.py: needs a GPU and MAMBA_SSM_SRC)."""
from kdiff.kernels.mamba3.upstream import StepCandidate


class ModelNew(StepCandidate):
    pass
