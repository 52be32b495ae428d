"""unsloth hunt: SwiGLU's gate, as Llama's MLP: silu(e) * g, (batch, seq, hidden)"""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH, SEQ, HIDDEN = 2, 16, 384


class Model(nn.Module):
    def forward(self, e, g):
        return F.silu(e) * g


def get_inputs():
    return [torch.randn(BATCH, SEQ, HIDDEN), torch.randn(BATCH, SEQ, HIDDEN)]


def get_init_inputs():
    return []
