"""unsloth hunt: mean cross entropy of (batch, seq, vocab) logits over a vocabulary past
65536 (Gemma's 256000, Qwen's 151936: unsloth's chunked kernels, two chunks here)"""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH, SEQ, VOCAB = 1, 4, 131072


class Model(nn.Module):
    def forward(self, logits, labels):
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))


def get_inputs():
    return [torch.randn(BATCH, SEQ, VOCAB), torch.randint(0, VOCAB, (BATCH, SEQ))]


def get_init_inputs():
    return []
