"""Announces a reply of a terabyte on the worker's channel, hoping the judge buffers it."""
import os
import struct
import sys

import torch.nn as nn

sys.path.insert(0, os.path.dirname(__file__))
from reply_pipe import reply_pipe


class ModelNew(nn.Module):
    def forward(self, x):
        fd = reply_pipe()
        os.write(fd, struct.pack("<Q", 1 << 40))
        while True:
            os.write(fd, b"\0" * (1 << 20))
