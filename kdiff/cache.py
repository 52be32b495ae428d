"""Where kdiff keeps what it can compute again but would rather not: $KDIFF_CACHE, else
$XDG_CACHE_HOME/kdiff, else ~/.cache/kdiff. Each user of it takes a folder of its own
(RES-02's compile results, the TritonBench adapter's materialised cases); deleting the whole
folder is always safe."""
from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    named = os.environ.get("KDIFF_CACHE")
    if named:
        return Path(named)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kdiff"
