"""Connects to a TCP port on this machine (KDIFF_HOSTILE_PORT: a listener the suite opened) to
send the inputs out; returns the right answer only if it got through."""
import os
import socket

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        port = int(os.environ.get("KDIFF_HOSTILE_PORT", "9"))
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(x.numpy().tobytes())
        return x * 2
