"""Allocates (and touches) 256 MiB after 256 MiB, where its input lives, until something
gives."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        hoard = []
        while True:
            hoard.append(torch.ones(64 << 20, device=x.device))
