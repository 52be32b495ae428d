"""Connects to a TCP port on this machine (a listener the suite opened, named in hostile.json
beside it) to send the inputs out; returns the right answer only if it got through."""
import json
import socket
from pathlib import Path

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        told = Path(__file__).with_name("hostile.json")
        port = json.loads(told.read_text())["port"] if told.exists() else 9
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(x.numpy().tobytes())
        return x * 2
