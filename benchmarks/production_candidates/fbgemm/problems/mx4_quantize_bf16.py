"""FBGEMM hunt: MX4 quantization of bf16 inputs (mx4_quantize.py's, the values scaled in fp32
as the kernel scales them); the problems' folder on PYTHONPATH"""

import torch
from mx4_quantize import K, M, Model  # noqa: F401


def get_inputs():
    return [torch.randn(M, K, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
