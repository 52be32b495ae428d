"""The machine-readable report: the spec's JSON contract."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kdiff import __version__
from kdiff.differential.confusion import confusion
from kdiff.model import Verdict


def report(verdicts: list[Verdict], bench: str, native: str, device: str,
           extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "kdiff_version": __version__,
        "bench": bench,
        "native": native,
        "device": device,
        **(extra or {}),
        "kernels": [v.to_json() for v in verdicts],
        "confusion": confusion(verdicts).to_json(),
    }


def write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str))
    tmp.replace(path)
