"""What the verifier found: failures per gate (over all judged kernels and over those the
benchmark accepts), the share failing at least one gate, and the most common defect."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

from kdiff.data.model import GateClass, Status, Verdict
from kdiff.differential.stats import Rate, wilson


@dataclass
class GateTally:
    gate: str
    klass: str | None  # "tolerance-free" / "thresholded"; None for a gate kdiff does not know
    judged: int = 0  # kernels this gate gave a result for (any status)
    failed: int = 0
    failed_native_accepted: int = 0
    signatures: dict[str, int] = field(default_factory=dict)  # failures by signature

    def to_json(self) -> dict[str, Any]:
        return {"class": self.klass, "judged": self.judged, "failed": self.failed,
                "failed_native_accepted": self.failed_native_accepted,
                "signatures": dict(self.signatures)}


@dataclass
class Defect:
    """A failing gate with its signature, e.g. `EXC-01=nan_swallowed`, and how many kernels
    show it."""

    gate: str
    signature: str | None
    count: int

    @property
    def label(self) -> str:
        return f"{self.gate}={self.signature}" if self.signature else self.gate

    def to_json(self) -> dict[str, Any]:
        return {"gate": self.gate, "signature": self.signature, "count": self.count,
                "label": self.label}


@dataclass
class Defects:
    """Denominators are the kernels the gates judged: a case that could not be judged at all
    (problem error, candidate that does not import) fails no gate and is not counted."""

    gates: list[GateTally]
    any_gate: Rate
    tolerance_free: Rate
    any_gate_native_accepted: Rate
    tolerance_free_native_accepted: Rate
    modal: Defect | None
    modal_native_accepted: Defect | None

    def to_json(self) -> dict[str, Any]:
        def opt(d: Defect | None) -> dict[str, Any] | None:
            return d.to_json() if d else None
        return {"gates": {t.gate: t.to_json() for t in self.gates},
                "any_gate": self.any_gate.to_json(),
                "tolerance_free": self.tolerance_free.to_json(),
                "any_gate_native_accepted": self.any_gate_native_accepted.to_json(),
                "tolerance_free_native_accepted": self.tolerance_free_native_accepted.to_json(),
                "modal": opt(self.modal), "modal_native_accepted": opt(self.modal_native_accepted)}


def gate_classes(verdicts: Iterable[Verdict]) -> dict[str, GateClass]:
    """The class of each gate, as its results carry it; gates whose results do not (records
    written before they did) are left out."""
    return {gid: r.klass for v in verdicts for gid, r in v.gates.items() if r.klass is not None}


def _modal(counter: Counter) -> Defect | None:
    if not counter:
        return None
    # The highest count; ties broken by gate id, then signature, so reruns agree.
    (gate, sig), n = min(counter.items(), key=lambda kv: (-kv[1], kv[0][0], kv[0][1] or ""))
    return Defect(gate, sig, n)


def defects(verdicts: list[Verdict], classes: dict[str, GateClass] | None = None) -> Defects:
    judged = [v for v in verdicts if v.error is None]
    ids = sorted({gid for v in judged for gid in v.gates})
    classes = gate_classes(judged) if classes is None else classes
    tallies = {gid: GateTally(gid, classes[gid].value if gid in classes else None)
               for gid in ids}
    all_defects: Counter = Counter()
    accepted_defects: Counter = Counter()
    any_fail = tf_fail = any_fail_acc = tf_fail_acc = accepted = 0
    for v in judged:
        native_accept = v.native.accept is True
        accepted += native_accept
        failed = v.failed_gates
        tolerance_free = any(classes.get(g) is GateClass.TOLERANCE_FREE for g in failed)
        any_fail += bool(failed)
        tf_fail += tolerance_free
        any_fail_acc += bool(failed) and native_accept
        tf_fail_acc += tolerance_free and native_accept
        for gid, result in v.gates.items():
            tally = tallies[gid]
            tally.judged += 1
            if result.status is not Status.FAIL:
                continue
            tally.failed += 1
            tally.failed_native_accepted += native_accept
            sig = result.signature or ""
            tally.signatures[sig] = tally.signatures.get(sig, 0) + 1
            all_defects[(gid, result.signature)] += 1
            if native_accept:
                accepted_defects[(gid, result.signature)] += 1
    return Defects(
        gates=[tallies[g] for g in _catalogue_order(ids, classes)],
        any_gate=wilson(any_fail, len(judged)), tolerance_free=wilson(tf_fail, len(judged)),
        any_gate_native_accepted=wilson(any_fail_acc, accepted),
        tolerance_free_native_accepted=wilson(tf_fail_acc, accepted),
        modal=_modal(all_defects), modal_native_accepted=_modal(accepted_defects))


def _catalogue_order(ids: list[str], classes: dict[str, GateClass]) -> list[str]:
    """The catalogue's order: tolerance-free gates first, then by id."""
    rank = {GateClass.TOLERANCE_FREE: 0, GateClass.THRESHOLDED: 1}
    return sorted(ids, key=lambda g: (rank.get(classes.get(g), 2), g))
