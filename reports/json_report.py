"""The machine-readable report: the spec's JSON contract, plus the differential engine's
statistics (`summary`, `by_level`, `by_problem`) and a per-kernel `status` (accept | reject | error)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kdiff import __version__
from kdiff.differential.confusion import confusion
from kdiff.differential.summary import breakdown, summarize
from kdiff.model import Verdict
from kdiff.reports.rows import kernel_row


def report(verdicts: list[Verdict], bench: str, native: str, device: str,
           extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "kdiff_version": __version__,
        "bench": bench,
        "native": native,
        "device": device,
        **(extra or {}),
        "kernels": [{**v.to_json(), "status": kernel_row(v).status} for v in verdicts],
        "confusion": confusion(verdicts).to_json(),
        "summary": summarize(verdicts).to_json(),
        "by_level": {k: s.to_json() for k, s in breakdown(verdicts, "level").items()},
        "by_problem": {k: s.to_json() for k, s in breakdown(verdicts, "problem").items()},
    }


def write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str))
    tmp.replace(path)
