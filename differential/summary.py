"""Everything the differential engine says about a set of verdicts, overall and broken down
by level or problem."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from kdiff.data.model import GateClass, Verdict
from kdiff.differential.confusion import Confusion, confusion
from kdiff.differential.defects import Defects, defects, gate_classes
from kdiff.differential.disagreement import Disagreement, disagreement
from kdiff.differential.provenance import ProvenanceCounts, provenance_counts


@dataclass
class Summary:
    kernels: int
    errors: int  # rows with an error (problem broken, candidate does not import, ...)
    confusion: Confusion
    disagreement: Disagreement
    defects: Defects
    provenance: ProvenanceCounts

    def to_json(self) -> dict[str, Any]:
        return {"kernels": self.kernels, "errors": self.errors,
                "confusion": self.confusion.to_json(),
                "percentages": self.confusion.percentages(),
                "disagreement": self.disagreement.to_json(),
                "defects": self.defects.to_json(),
                "provenance": self.provenance.to_json()}


def summarize(verdicts: list[Verdict], classes: dict[str, GateClass] | None = None) -> Summary:
    table = confusion(verdicts)
    return Summary(kernels=len(verdicts), errors=sum(v.error is not None for v in verdicts),
                   confusion=table, disagreement=disagreement(table),
                   defects=defects(verdicts, classes),
                   provenance=provenance_counts(verdicts))


def level_of(v: Verdict) -> str:
    """The KernelBench level: the adapter's metadata, else the problem's `levelN` folder."""
    level = v.case.metadata.get("level")
    if level is None:
        m = re.fullmatch(r"level_?(\d+)", v.case.problem.parent.name)
        level = m.group(1) if m else "?"
    return f"level {level}"


def problem_of(v: Verdict) -> str:
    return str(v.case.metadata.get("problem") or v.case.problem.stem)


GROUPINGS: dict[str, Callable[[Verdict], str]] = {"level": level_of, "problem": problem_of}


def breakdown(verdicts: list[Verdict], by: str | Callable[[Verdict], str],
              classes: dict[str, GateClass] | None = None) -> dict[str, Summary]:
    """One summary per group, groups in order of first appearance."""
    key = GROUPINGS[by] if isinstance(by, str) else by
    if classes is None:
        classes = gate_classes(verdicts)
    groups: dict[str, list[Verdict]] = {}
    for v in verdicts:
        groups.setdefault(key(v), []).append(v)
    return {name: summarize(vs, classes) for name, vs in groups.items()}
