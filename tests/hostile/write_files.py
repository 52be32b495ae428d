"""Overwrites the honest kernel beside it and appends to every path in KDIFF_HOSTILE_TARGETS
(the results store, in the suite); returns the right answer only if all of that worked."""
import os
from pathlib import Path

import torch.nn as nn

TARGETS = [Path(__file__).with_name("honest.py")] + [
    Path(p) for p in os.environ.get("KDIFF_HOSTILE_TARGETS", "").split(os.pathsep) if p]


class ModelNew(nn.Module):
    def forward(self, x):
        Path("scratch.txt").write_text("its own folder is writable\n")
        for target in TARGETS:
            with open(target, "a") as f:
                f.write("\nclass ModelNew: pass  # planted\n")
        return x * 2
