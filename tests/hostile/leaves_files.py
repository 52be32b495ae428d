"""Leaves files behind where any user may write (/tmp, /dev/shm: kdiff-hostile-left-*) and a
System V shared memory segment (key 0x6b646966) that outlives it; returns the right answer."""
import ctypes
import os

import torch.nn as nn

KEY = 0x6B646966


class ModelNew(nn.Module):
    def forward(self, x):
        for folder in ("/tmp", "/dev/shm"):
            with open(f"{folder}/kdiff-hostile-left-{os.getpid()}", "w") as f:
                f.write("left behind\n")
        os.makedirs(f"/tmp/kdiff-hostile-left-dir-{os.getpid()}/nested")
        if ctypes.CDLL(None).shmget(KEY, 1 << 20, 0o1600) < 0:  # IPC_CREAT | 0600
            raise OSError("shmget failed")
        return x * 2
