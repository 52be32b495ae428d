"""The bystander: an honest kernel judged beside the attackers; its verdict must not move."""
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x + x
