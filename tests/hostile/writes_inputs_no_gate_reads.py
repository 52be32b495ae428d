"""Doubles, and zeroes its input after reading it, in every call but those whose inputs a
gate reads back: RES-01's (the worker runs the reference right before the candidate, or
poisons torch's factories) and CMP-02's on the tensors its worker keeps. It tells them
apart by the request its worker is sent, which it reads by wrapping the worker's `cmd_call`
(any candidate can: the worker's module is in its process)."""

import torch.nn as nn

# The options of a call whose inputs a gate reads back after it (kdiff's worker).
_WATCHED = ("reference_first", "poison", "store_inputs_as", "use_stored_inputs")
_WATCHED_NOW = []

try:
    from kdiff.sandbox import worker

    _call = worker.Worker.cmd_call

    def _cmd_call(self, msg):
        _WATCHED_NOW[:] = [any(msg.get(option) for option in _WATCHED)]
        return _call(self, msg)

    worker.Worker.cmd_call = _cmd_call
except ImportError:
    pass


class ModelNew(nn.Module):
    def forward(self, x):
        out = x * 2
        if _WATCHED_NOW and not _WATCHED_NOW[0]:
            x.zero_()
        return out
