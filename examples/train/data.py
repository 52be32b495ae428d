"""Byte-level corpus from text found on the machine: the sorted *.py, *.md, *.rst and *.txt files
under given roots (by default the Python installation's standard library), each file to train
or held-out by the hash of its content, packed into uint8 arrays cached in a folder with a
manifest (every file's relative path and sha256, and the digest of the whole) so that runs on
different machines can be compared by the manifest's digest."""
from __future__ import annotations

import hashlib
import json
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

SUFFIXES = (".py", ".md", ".rst", ".txt")
SEPARATOR = b"\0"  # between files; no text file here contains NUL
HELD_OUT_PER_256 = 5  # files whose content hash's first byte is < 5: ~2% held out


@dataclass(frozen=True)
class Corpus:
    train: np.ndarray     # uint8
    held_out: np.ndarray  # uint8
    digest: str           # sha256 over the manifest


def default_roots() -> list[Path]:
    return [Path(sysconfig.get_paths()["stdlib"])]


def collect(roots: list[Path], max_bytes: int) -> list[tuple[str, bytes]]:
    """(label, content) of the files under roots, sorted by label, up to max_bytes in all."""
    files, total = [], 0
    for root in roots:
        for path in sorted(p for p in root.rglob("*") if p.suffix in SUFFIXES and p.is_file()):
            content = path.read_bytes()
            if SEPARATOR in content:
                continue
            files.append((f"{root.name}/{path.relative_to(root).as_posix()}", content))
    files.sort(key=lambda f: f[0])
    kept = []
    for label, content in files:
        if total + len(content) > max_bytes:
            break
        kept.append((label, content))
        total += len(content)
    return kept


def build(cache: Path, roots: list[Path], max_bytes: int) -> Corpus:
    """The corpus, read from `cache` where it was built before for the same roots and size."""
    key = hashlib.sha256(json.dumps([[str(r) for r in roots], max_bytes]).encode()).hexdigest()[:16]
    folder = cache / key
    if (folder / "manifest.json").exists():
        manifest = json.loads((folder / "manifest.json").read_text())
        return Corpus(np.load(folder / "train.npy", mmap_mode="r"),
                      np.load(folder / "held_out.npy", mmap_mode="r"), manifest["digest"])
    parts: dict[str, list[bytes]] = {"train": [], "held_out": []}
    entries = []
    for label, content in collect(roots, max_bytes):
        sha = hashlib.sha256(content).hexdigest()
        split = "held_out" if int(sha[:2], 16) < HELD_OUT_PER_256 else "train"
        parts[split].append(content)
        entries.append({"file": label, "sha256": sha, "split": split})
    digest = hashlib.sha256(json.dumps(entries).encode()).hexdigest()
    folder.mkdir(parents=True, exist_ok=True)
    arrays = {name: np.frombuffer(SEPARATOR.join(chunks), dtype=np.uint8)
              for name, chunks in parts.items()}
    for name, array in arrays.items():
        np.save(folder / f"{name}.npy", array)
    (folder / "manifest.json").write_text(json.dumps(
        {"digest": digest, "roots": [str(r) for r in roots], "max_bytes": max_bytes,
         "bytes": {name: len(a) for name, a in arrays.items()}, "files": entries}, indent=1))
    return Corpus(arrays["train"], arrays["held_out"], digest)


def batch(data: np.ndarray, seed: int, step: int, batch_size: int, seq_len: int
          ) -> tuple[torch.Tensor, torch.Tensor]:
    """Batch `step` of a run: random windows drawn by a generator seeded by (seed, step) alone,
    so that the data order is fixed by the seed and a resumed run needs only its step."""
    if len(data) <= seq_len + 1:
        raise ValueError(f"{len(data)} bytes of data cannot give a window of {seq_len + 1}")
    gen = torch.Generator().manual_seed(seed * 1_000_003 + step)
    starts = torch.randint(0, len(data) - seq_len - 1, (batch_size,), generator=gen)
    window = torch.from_numpy(np.stack([data[s:s + seq_len + 1] for s in starts.tolist()]))
    window = window.long()
    return window[:, :-1], window[:, 1:]
