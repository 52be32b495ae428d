"""Right answers, but writes into its input whenever it is handed a tensor it has seen before
(a caller's buffer reused from call to call): never in a call of new tensors."""
import torch.nn as nn

_SEEN = []


class ModelNew(nn.Module):
    def forward(self, x):
        out = x * 2
        if any(t is x for t in _SEEN):
            x.zero_()
        else:
            _SEEN.append(x)
        return out
