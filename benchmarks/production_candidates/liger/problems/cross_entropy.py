"""Mean cross entropy of logits over a vocabulary against class targets."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, logits, target):
        return F.cross_entropy(logits, target)


batch_size = 32
vocab = 512


def get_inputs():
    return [torch.randn(batch_size, vocab), torch.randint(0, vocab, (batch_size,))]


def get_init_inputs():
    return []
