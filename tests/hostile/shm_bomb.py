"""Fills memfd files (shared memory: no address space, so RLIMIT_AS never sees it), 8 MiB
each (under any cap on the size of one file), allocated at once, up to
the `shm_bytes` that hostile.json beside it names (3 GiB without it: twice the suite's memory
limit); returns the right answer only if all of it got allocated."""
import json
import os
from pathlib import Path

import torch.nn as nn

CHUNK = 8 << 20
_TOLD = Path(__file__).with_name("hostile.json")
TOTAL = json.loads(_TOLD.read_text()).get("shm_bytes", 3 << 30) if _TOLD.exists() else 3 << 30


class ModelNew(nn.Module):
    def forward(self, x):
        hoard = []
        for _ in range(TOTAL // CHUNK):
            hoard.append(os.memfd_create("kdiff-hostile-shm"))
            os.posix_fallocate(hoard[-1], 0, CHUNK)  # its pages, at once
        return x * 2
