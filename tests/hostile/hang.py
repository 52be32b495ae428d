"""Never returns: a busy loop with signals ignored where it can."""
import signal

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        while True:
            pass
