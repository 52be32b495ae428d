"""kdiff-control: lightllm rmsnorm"""

import lightllm_cpu as L
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, weight):
        return L.load("llama/triton_kernel/rmsnorm.py").rmsnorm_forward(x, weight, 1e-6)
