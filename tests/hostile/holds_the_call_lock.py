"""Right, slowly, and alone: it raises an error that names memory exhaustion on each new
input, which the judge judges again alone (every other judge's calls wait on the call lock
meanwhile), and answers that second call right after sleeping just under its deadline. Its
own verdict may be anything; what it spends is the wall budgets of the cases judged beside
it, whose calls wait on the lock while it sleeps."""

import time

import torch
import torch.nn as nn

# Under the call timeout the run is given (`--call-timeout 3` where it is measured).
SLEEP_S = 2.0


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.last = None

    def forward(self, x):
        if self.last is not None and self.last.shape == x.shape and torch.equal(self.last, x):
            time.sleep(SLEEP_S)  # the call again, alone
            return x * 2
        self.last = x.clone()
        raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
