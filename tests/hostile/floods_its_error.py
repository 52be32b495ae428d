"""Wrong by half, and answers every call with a failure whose error is 8 MiB of text (its
worker cuts its own errors to 500 characters; the candidate writes its reply itself): the
text became the detail of every gate and of the native check, and so every report of the
run and its results store held it, once per gate: 100 MiB of one kernel's verdict."""

import torch.nn as nn

ERROR_BYTES = 8 << 20

try:
    from kdiff.sandbox import protocol

    _encode = protocol.encode

    def _flooded(reply):
        if isinstance(reply, dict) and "outputs" in reply:
            reply = {"ok": False, "error": "RuntimeError: " + "x" * ERROR_BYTES}
        return _encode(reply)

    protocol.encode = _flooded
except ImportError:
    pass


class ModelNew(nn.Module):
    def forward(self, x):
        return x * 3
