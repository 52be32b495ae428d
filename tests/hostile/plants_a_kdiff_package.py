"""Writes a `kdiff` package into its own folder, which outlives a restart of its worker, then
ends its worker. A worker started again cold was started by `python -m
kdiff.sandbox.confine` in that folder: `-m` imports from the folder it starts in, and the
launcher ran the package's code as the judge's user (root) before confining itself. Each
process that runs it notes whether it was confined (`kdiff-ran`, in the worker's folder)."""

import os
import threading
import time
from pathlib import Path

import torch.nn as nn

FOLDER = os.getcwd()
LINE = (
    "status = open('/proc/self/status').read()\n"
    f"with open({os.path.join(FOLDER, 'kdiff-ran')!r}, 'a') as f:\n"
    "    f.write('confined\\n' if 'NoNewPrivs:\\t1' in status else 'unconfined\\n')\n"
)
package = Path(FOLDER) / "kdiff" / "sandbox"
package.mkdir(parents=True, exist_ok=True)
(package.parent / "__init__.py").write_text(LINE)
(package / "__init__.py").write_text("")
(package / "confine.py").write_text(LINE)

threading.Thread(target=lambda: (time.sleep(0.5), os._exit(3)), daemon=True).start()


class ModelNew(nn.Module):
    def forward(self, x):
        return x * 2
