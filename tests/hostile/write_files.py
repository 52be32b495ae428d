"""Overwrites the honest kernel beside it and appends to every path that hostile.json beside
it names (the results store, in the suite); returns the right answer only if all of that
worked."""
import json
from pathlib import Path

import torch.nn as nn

_TOLD = Path(__file__).with_name("hostile.json")
TARGETS = [Path(__file__).with_name("honest.py")] + [
    Path(p) for p in (json.loads(_TOLD.read_text())["targets"] if _TOLD.exists() else [])]


class ModelNew(nn.Module):
    def forward(self, x):
        Path("scratch.txt").write_text("its own folder is writable\n")
        for target in TARGETS:
            with open(target, "a") as f:
                f.write("\nclass ModelNew: pass  # planted\n")
        return x * 2
