"""A running product leaving fp32's range, a dropout's random draw and a log-sum-exp: what
the oracle's alternatives, its replayed draws and its mixing reductions trace."""

import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.dropout = torch.nn.Dropout(0.25)

    def forward(self, x, growth):
        product = torch.cumprod(growth, dim=-1)
        return (
            product * x,
            self.dropout(x),
            torch.logsumexp(x, dim=-1),
            torch.nn.functional.layer_norm(x * 1e4 + 1e6, (x.shape[-1],)),
        )


def get_inputs():
    return [torch.randn(4, 128), torch.rand(4, 128) * 3 + 2]


def get_init_inputs():
    return []
