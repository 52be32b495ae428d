"""Writes its own reply on the worker's channel: a tensor file (the judge's own message format)
whose output is a view reaching 1 MiB past the end of its 16-byte storage. Built as declared,
the judge would compare (and report) the bytes of its own heap that follow that storage."""
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(__file__))
import torch.nn as nn
from reply_pipe import reply_pipe

from kdiff.data.tensorfile import MAGIC, TENSOR


class ModelNew(nn.Module):
    def forward(self, x):
        header = json.dumps({
            "tree": {"ok": True, "seconds": 0.0, "outputs": [{TENSOR: 0}],
                     "inputs_after": [None], "kept": []},
            "storages": [{"offset": 0, "nbytes": 16}],
            "tensors": [{"storage": 0, "dtype": "float32", "shape": list(x.shape),
                         "stride": [1 << 16] + [1] * (x.dim() - 1), "offset": 0}]}).encode()
        data = MAGIC + struct.pack("<Q", len(header)) + header + bytes(16)
        os.write(reply_pipe(), struct.pack("<Q", len(data)) + data)
        return x * 2
