"""Sparsemax over the last dimension (Martins & Astudillo 2016), in plain torch."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        z, _ = torch.sort(x, dim=-1, descending=True)
        k = torch.arange(1, x.shape[-1] + 1, device=x.device, dtype=x.dtype)
        cs = z.cumsum(-1)
        support = (1 + k * z > cs).to(x.dtype)
        k_z = support.sum(-1, keepdim=True)
        tau = (torch.gather(cs, -1, k_z.long() - 1) - 1) / k_z
        return torch.clamp(x - tau, min=0)


batch_size = 32
dim = 256


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
