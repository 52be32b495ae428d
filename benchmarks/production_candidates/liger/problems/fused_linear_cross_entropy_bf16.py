"""Liger fused linear cross entropy at bf16: a bf16 LM head (no bias), its logits widened to fp32
as Hugging Face's causal LMs do (`logits.float()`), then mean cross entropy against class targets."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, hidden, vocab):
        super().__init__()
        self.lm_head = nn.Linear(hidden, vocab, bias=False, dtype=torch.bfloat16)

    def forward(self, x, target):
        return F.cross_entropy(self.lm_head(x).float(), target)


batch_size = 8
hidden = 64
vocab = 256


def get_inputs():
    return [
        torch.randn(batch_size, hidden, dtype=torch.bfloat16),
        torch.randint(0, vocab, (batch_size,)),
    ]


def get_init_inputs():
    return [hidden, vocab]
