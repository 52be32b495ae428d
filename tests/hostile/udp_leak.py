"""Sends its inputs out as a UDP datagram (Landlock restricts TCP only) to the port that
hostile.json beside it names; returns the right answer only if the datagram left."""
import json
import socket
from pathlib import Path

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        told = Path(__file__).with_name("hostile.json")
        port = json.loads(told.read_text())["udp_port"] if told.exists() else 9
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.sendto(x.numpy().tobytes(), ("127.0.0.1", port))
        return x * 2
