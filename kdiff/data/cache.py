"""Where kdiff keeps what it can compute again but would rather not: $KDIFF_CACHE, else
$XDG_CACHE_HOME/kdiff, else ~/.cache/kdiff. Each user of it takes a folder of its own
(RES-02's compile results, the TritonBench adapter's materialised cases, the float64
oracle's evaluations); deleting the whole folder is always safe. What only judges may read
(the oracle's answers, the call lock) is in `private_root()`, which no worker can open."""
from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path


def cache_root() -> Path:
    named = os.environ.get("KDIFF_CACHE")
    if named:
        return Path(named)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kdiff"


PRIVATE = "judges-only"


def private_root() -> Path:
    """The cache's folder for judges alone, made 0700: a worker under a uid of its own cannot
    enter it, and Landlock keeps one under the judge's uid out (kdiff.sandbox.confine)."""
    folder = cache_root() / PRIVATE
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    if folder.stat().st_mode & 0o077:
        folder.chmod(0o700)  # made by hand, or by a kdiff before this folder was private
    return folder


def cache_key(version: int, *parts: str) -> str:
    """12 hex digits naming what a writer at format `version` made from `parts` (a folder's
    name: a changed input or a bumped format is a new folder, never a stale one)."""
    h = hashlib.sha256(str(version).encode())
    for p in parts:
        h.update(b"\0" + p.encode())
    return h.hexdigest()[:12]


def slug(text: str) -> str:
    """`text` as a readable part of a file name."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")


def write_atomic(path: Path, content: str | bytes) -> None:
    """Atomic, so that two judges preparing one case never see half a file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    if isinstance(content, bytes):
        tmp.write_bytes(content)
    else:
        tmp.write_text(content, encoding="utf-8")
    tmp.replace(path)
