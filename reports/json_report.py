"""The machine-readable report: the spec's JSON contract, plus the differential engine's
statistics (`summary`, `by_level`, `by_problem`) and a per-kernel `status` (accept | reject | error).

Strict JSON (RFC 8259, what JSON.parse and jq read): a non-finite number, such as the
`worst_ratio` of an output that is NaN or Inf where the oracle is finite, is written as the
string "inf", "-inf" or "nan"."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from kdiff import __version__
from kdiff.data.model import Verdict
from kdiff.differential.confusion import confusion
from kdiff.differential.summary import breakdown, summarize
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
        # open verdicts, by id: violations for --fail-on violation unless --undecided-ok
        "undecided": [v.case.id for v in verdicts if v.verifier_accept is None],
        "confusion": confusion(verdicts).to_json(),
        "summary": summarize(verdicts).to_json(),
        "by_level": {k: s.to_json() for k, s in breakdown(verdicts, "level").items()},
        "by_problem": {k: s.to_json() for k, s in breakdown(verdicts, "problem").items()},
    }


NON_FINITE = {math.inf: "inf", -math.inf: "-inf"}


def strict(value: Any) -> Any:
    """`value` with every non-finite float replaced by its string ("inf", "-inf", "nan")."""
    if isinstance(value, float) and not math.isfinite(value):
        return NON_FINITE.get(value, "nan")
    if isinstance(value, dict):
        return {k: strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict(v) for v in value]
    return value


def dumps(data: Any) -> str:
    """Strict JSON text of `data` (allow_nan=False: a non-finite number left over raises)."""
    return json.dumps(strict(data), indent=2, default=str, allow_nan=False)


def write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(dumps(data))
    tmp.replace(path)
