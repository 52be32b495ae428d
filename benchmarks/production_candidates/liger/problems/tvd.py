"""Total variation distance between two distributions over a vocabulary, from their logits:
0.5 * sum |P - Q| over the vocabulary, averaged over the rows (batchmean)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, logits_p, logits_q):
        p = torch.softmax(logits_p, dim=-1)
        q = torch.softmax(logits_q, dim=-1)
        return 0.5 * (p - q).abs().sum() / logits_p.shape[0]


batch_size = 8
vocab = 256


def get_inputs():
    return [torch.randn(batch_size, vocab), torch.randn(batch_size, vocab)]


def get_init_inputs():
    return []
