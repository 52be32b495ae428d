"""Writes its own reply on the worker's channel: a pickle that would run a shell command in
an unrestricted unpickler (touching KDIFF_HOSTILE_MARKER)."""
import os
import pickle
import struct
import sys

import torch.nn as nn


class _Payload:
    def __reduce__(self):
        return (os.system, (f"touch {os.environ.get('KDIFF_HOSTILE_MARKER', '/dev/null')}",))


class ModelNew(nn.Module):
    def forward(self, x):
        data = pickle.dumps({"ok": True, "outputs": [_Payload()]})
        os.write(int(sys.argv[2]), struct.pack("<Q", len(data)) + data)
        return x * 2
