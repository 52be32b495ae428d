import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features, p):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.dropout = nn.Dropout(p)

    def forward(self, x):
        return self.dropout(self.fc(x)).mean(dim=1, keepdim=True)


batch_size = 16
in_features = 32
out_features = 64
p = 0.2


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, p]
