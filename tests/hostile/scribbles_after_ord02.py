"""Hands out a fresh output every call and, once ORD-02 is over, uses the one it handed out
last as the next call's scratch buffer (as `scribbles_on_earlier_outputs` does from its first
call). ORD-02 alone read the worker's report of earlier outputs changed after they were
handed out; it is over at the first call sent without churn after churned ones, which the
candidate reads in its requests (it wraps its worker's `cmd_call`). EXC-01, CMP-02, RES-01
and RES-02 are judged after it."""

import torch
import torch.nn as nn

_SEEN = {"churned": False, "after": False}
try:
    from kdiff.sandbox import worker

    _call = worker.Worker.cmd_call

    def _cmd_call(self, msg):
        if msg.get("churn"):
            _SEEN["churned"] = True
        elif _SEEN["churned"]:
            _SEEN["after"] = True
        return _call(self, msg)

    worker.Worker.cmd_call = _cmd_call
except ImportError:
    pass


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.last = None

    def forward(self, x):
        scratch = None
        if _SEEN["after"] and self.last is not None and self.last.shape == x.shape:
            scratch = self.last
        if scratch is None:
            scratch = torch.empty_like(x)
        torch.add(x, x, out=scratch)
        out = scratch.clone()
        self.last = out
        return out
