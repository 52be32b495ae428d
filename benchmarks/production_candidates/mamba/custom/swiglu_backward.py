"""kdiff-control: mamba_ssm k_activations _swiglu_bwd (recompute_output)"""

import mamba_cpu as M
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, xy, dout):
        return M.load("k_activations")._swiglu_bwd(xy, dout, recompute_output=True)
