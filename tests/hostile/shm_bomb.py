"""Fills memfd files (shared memory: no address space, so RLIMIT_AS never sees it), 8 MiB
each (under any cap on the size of one file), allocated at once, up to
KDIFF_HOSTILE_SHM_BYTES (3 GiB unless set: twice the suite's memory limit); returns the
right answer only if all of it got allocated."""
import os

import torch.nn as nn

CHUNK = 8 << 20


class ModelNew(nn.Module):
    def forward(self, x):
        hoard = []
        for _ in range(int(os.environ.get("KDIFF_HOSTILE_SHM_BYTES", 3 << 30)) // CHUNK):
            hoard.append(os.memfd_create("kdiff-hostile-shm"))
            os.posix_fallocate(hoard[-1], 0, CHUNK)  # its pages, at once
        return x * 2
