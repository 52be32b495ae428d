"""Wrong by half, and answers every call with a failure of no form the judge reads
(`{"ok": False}`, no error): the judge raised KeyError reading the error, and the case was
kdiff's failure (no verdict) where the kernel's reject was due."""

import torch.nn as nn

try:
    from kdiff.sandbox import protocol

    _encode = protocol.encode

    def _failure_without_an_error(reply):
        if isinstance(reply, dict) and "outputs" in reply:
            reply = {"ok": False}
        return _encode(reply)

    protocol.encode = _failure_without_an_error
except ImportError:
    pass


class ModelNew(nn.Module):
    def forward(self, x):
        return x * 3
