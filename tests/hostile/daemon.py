"""Leaves a daemon behind: a grandchild in a session of its own (setsid, out of the worker's
process group), named kdiff-daemon, asleep for five minutes; returns the right answer.
The name is given before the second fork, so the daemon carries it from birth and is
findable as soon as the call returns."""
import ctypes
import os
import time

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        if os.fork() == 0:
            os.setsid()
            ctypes.CDLL(None).prctl(15, b"kdiff-daemon", 0, 0, 0)  # PR_SET_NAME
            if os.fork() == 0:
                time.sleep(300)
            os._exit(0)
        os.wait()
        return x * 2
