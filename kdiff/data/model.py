"""The data that travels: cases in, gate results and verdicts out.

Everything here is a plain dataclass so that verdicts can be stored, compared between a
serial and a parallel run, and rendered by any report without knowing who produced them.
"""
from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kdiff.data.provenance import Provenance


class Status(str, enum.Enum):
    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"
    ERROR = "error"  # kdiff itself broke (or the reference could not be run)
    UNDER_SPECIFIED = "under_specified"  # the reference cannot meet the derived bound


class GateClass(str, enum.Enum):
    TOLERANCE_FREE = "tolerance-free"
    THRESHOLDED = "thresholded"


class Profile(str, enum.Enum):
    """How much a run judges: `full`, the twelve gates (the verdict); `quick`, the cheap
    screen (the tolerance-free gates and CMP-03 at a few held-out shapes and the variants)."""

    FULL = "full"
    QUICK = "quick"


# The detail of a gate result that holds no judgement (never stored, judged again next time).
NOT_RUN = "not run: "


@dataclass
class GateResult:
    """One gate's judgement of one candidate.

    `worst_ratio` is the largest error seen, in units of the gate's bound (thresholded gates
    only); `kdiff calibrate` compares it between honest and defective kernels.
    """

    gate: str
    status: Status
    signature: str | None = None
    detail: str = ""
    worst_ratio: float | None = None
    seconds: float = 0.0
    klass: GateClass | None = None  # None in records written before results carried it
    calls: int = 0  # candidate calls the gate sent (calls another gate made are not counted)

    @property
    def not_run(self) -> bool:
        return self.status is Status.ERROR and self.detail.startswith(NOT_RUN)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"status": self.status.value, "signature": self.signature,
                               "detail": self.detail}
        if self.klass is not None:
            out["class"] = self.klass.value
        if self.worst_ratio is not None:
            out["worst_ratio"] = self.worst_ratio
        out["seconds"] = round(self.seconds, 4)
        out["calls"] = self.calls
        return out

    @classmethod
    def from_json(cls, gate: str, data: dict[str, Any]) -> "GateResult":
        return cls(gate=gate, status=Status(data["status"]), signature=data.get("signature"),
                   detail=data.get("detail", ""), worst_ratio=data.get("worst_ratio"),
                   seconds=data.get("seconds", 0.0), calls=data.get("calls", 0),
                   klass=GateClass(data["class"]) if data.get("class") else None)


@dataclass
class NativeVerdict:
    """What the benchmark's own check says. `accept` is None when it could not run."""

    accept: bool | None
    preset: str
    implementation: str = "kdiff"  # "kdiff" (faithful re-implementation) or "harness"
    failed_trial: int | None = None
    reason: str = ""
    recorded: bool | None = None  # the verdict the harness wrote down, when there is one
    seconds: float = 0.0  # wall time, the candidate's import and compilation included

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class Case:
    """One candidate kernel to judge against one reference problem."""

    id: str
    problem: Path
    candidate: Path
    bench: str = "kernelbench"
    metadata: dict[str, Any] = field(default_factory=dict)
    recorded_accept: bool | None = None
    # A problem-level load error found during discovery (e.g. malformed eval_results.json);
    # the case is reported with status `error` rather than dropped.
    discovery_error: str | None = None


# A verdict of this kind says kdiff's judge process died, not what the kernel is: it is
# reported but never stored, so that the next run judges the case again.
TRANSIENT_ERROR_KIND = "judge"

# Gates that judge how a candidate runs, not what it returns (resources, time): a pass of
# theirs alone vouches for no output, as where a random reference leaves every gate that
# reads the outputs under-specified. Their failures still reject.
RUNS_ONLY_GATES = frozenset({"RES-02"})


@dataclass
class Verdict:
    case: Case
    native: NativeVerdict
    gates: dict[str, GateResult]
    error: str | None = None  # the case could not be judged at all (broken problem file, ...)
    # "candidate": the candidate does not import (a reject, as the harness records it);
    # "problem": the reference or the case is broken (no verdict); TRANSIENT_ERROR_KIND.
    error_kind: str = "problem"
    # Sizes the case was judged at where the benchmark's were too large (--max-elements):
    # constant -> (benchmark, judged).
    scaled_sizes: dict[str, tuple[int, int]] = field(default_factory=dict)
    # Whether the candidate computed with kernels of its own: beside the verdict, never in
    # it (verifier_accept does not read it). None where no call was recorded.
    provenance: Provenance | None = None
    # A judge's error (TRANSIENT_ERROR_KIND) that another judge goes on from: its CUDA context
    # broke in the reference on one gate's inputs, every gate before that one decided
    # (kdiff.verdicts.judge.judge_case's `resume`).
    resumable: bool = False
    # The draws (kdiff.judging.context.GateContext.draw_key) on which the reference broke a
    # judge's CUDA context: the next judge refuses each as the reference failing there, so
    # that the gate judges its other input sets, as on the CPU.
    broken_draws: tuple[str, ...] = ()
    # The seed the gates' draws chosen for this verdict came from (GateContext.chosen_seed): a
    # judge going on from a resumable verdict draws the same inputs, its broken draws among them.
    chosen_seed: int | None = None
    # The judge's CUDA context broke while judging this case (kdiff.verdicts.judge
    # .device_broken): its process judges nothing more, whatever the verdict says.
    judge_broken: bool = False

    @property
    def verifier_accept(self) -> bool | None:
        """Accept when no gate failed and at least one passed. A gate that could not judge
        (skip, under_specified) does not reject; a kdiff error on any gate leaves the verdict
        open (None), and so does a kernel no gate could judge (judged_by_nothing): nothing
        was checked, so nothing is vouched for."""
        if self.error is not None:
            return False if self.error_kind == "candidate" else None
        statuses = [g.status for g in self.gates.values()]
        if Status.FAIL in statuses:
            return False
        if Status.ERROR in statuses or self.judged_by_nothing:
            return None
        return True

    @property
    def judged_by_nothing(self) -> bool:
        """No gate failed, and none passed that reads the outputs: each skipped or was
        under-specified (a reference that returns no tensor, a problem with no floating
        input, a random reference), or passed on how the candidate runs alone
        (RUNS_ONLY_GATES; where only such gates were selected, their passes count), or
        none was selected."""
        if self.error is not None:
            return False
        statuses = [g.status for g in self.gates.values()]
        if Status.FAIL in statuses or Status.ERROR in statuses:
            return False
        reading = [g for gid, g in self.gates.items() if gid not in RUNS_ONLY_GATES]
        return not any(g.status is Status.PASS for g in reading or self.gates.values())

    @property
    def failed_gates(self) -> list[str]:
        return [gid for gid, g in self.gates.items() if g.status is Status.FAIL]

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.case.id,
            "problem": str(self.case.problem),
            "candidate": str(self.case.candidate),
            "metadata": self.case.metadata,
            "native_accept": self.native.accept,
            "native": self.native.to_json(),
            "recorded_accept": self.case.recorded_accept,
            "verifier_accept": self.verifier_accept,
            "error": self.error,
            "error_kind": self.error_kind if self.error else None,
            "gates": {gid: g.to_json() for gid, g in self.gates.items()},
            "scaled_sizes": {name: {"benchmark": b, "judged": j}
                             for name, (b, j) in self.scaled_sizes.items()},
            "provenance": self.provenance.to_json() if self.provenance else None,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], bench: str = "kernelbench") -> "Verdict":
        case = Case(id=data["id"], problem=Path(data["problem"]),
                    candidate=Path(data["candidate"]), bench=bench,
                    metadata=data.get("metadata", {}),
                    recorded_accept=data.get("recorded_accept"))
        native = NativeVerdict(**data["native"])
        gates = {gid: GateResult.from_json(gid, g) for gid, g in data["gates"].items()}
        scaled = {name: (v["benchmark"], v["judged"])
                  for name, v in (data.get("scaled_sizes") or {}).items()}
        provenance = data.get("provenance")
        return cls(case=case, native=native, gates=gates, error=data.get("error"),
                   error_kind=data.get("error_kind") or "problem", scaled_sizes=scaled,
                   provenance=Provenance.from_json(provenance) if provenance else None)
