"""The shipped corpus (`kdiff.kernels`): its problems, its red-team and control candidates, and
what their headers promise.

Discovery and the raw `key: value` header fields come from the KernelBench adapter through its
hooks (the corpus is in KernelBench layout); this module reads their meaning: which run a kernel belongs to,
which gates a red-team kernel must fail (and with which signature), and where it can be
judged. It also makes each problem's reference into a candidate of its own, the positive
control every problem has.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from kdiff.data.model import Case
from kdiff.judging.plugins import manager
from kdiff.judging.runconfig import RunConfig

BENCH = "kernelbench"  # the adapter whose layout the corpus is in
REDTEAM, CONTROLS, REFERENCES = "redteam", "controls", "references"


class HeaderError(ValueError):
    """A shipped candidate whose header does not say what it is."""


@dataclass(frozen=True)
class ExpectedGate:
    gate: str
    signature: str | None  # None: any failure of the gate counts


def parse_expected_gates(text: str) -> list[ExpectedGate]:
    """`EXC-01=nan_swallowed, ORD-02` -> [ExpectedGate("EXC-01", "nan_swallowed"), ...]."""
    out = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        gate, _, signature = item.partition("=")
        out.append(ExpectedGate(gate.strip(), signature.strip() or None))
    return out


@dataclass(frozen=True)
class CorpusKernel:
    """One judged candidate of the corpus: a red-team kernel, a control, or a reference
    submitted as its own candidate."""

    case: Case
    run: str  # REDTEAM, CONTROLS or REFERENCES
    name: str  # the header's short name
    expected: tuple[ExpectedGate, ...] = ()  # red team only

    @property
    def id(self) -> str:
        return self.case.id

    @property
    def honest(self) -> bool:
        return self.run != REDTEAM

    @property
    def expected_gates(self) -> list[str]:
        return [e.gate for e in self.expected]

    @property
    def requires(self) -> str | None:
        """"cuda" or "cpu": the one device where the defect shows (the header's `requires`)."""
        return self.case.metadata.get("requires")

    def runs_on(self, device: str) -> bool:
        return manager().hook.kdiff_not_judged_on(bench=BENCH, case=self.case,
                                                  device=device) is None


def _kernel(case: Case) -> CorpusKernel:
    meta = case.metadata
    run = meta.get("run")
    if run == REDTEAM:
        if "kdiff-redteam" not in meta or not meta.get("expected-gates"):
            raise HeaderError(f"{case.candidate}: a red-team kernel needs `kdiff-redteam:` and "
                              f"`expected-gates:` in its header")
        expected = tuple(parse_expected_gates(meta["expected-gates"]))
        return CorpusKernel(case, run, meta["kdiff-redteam"], expected)
    if run == CONTROLS:
        if "kdiff-control" not in meta:
            raise HeaderError(f"{case.candidate}: a control needs `kdiff-control:` in its header")
        return CorpusKernel(case, run, meta["kdiff-control"])
    raise HeaderError(f"{case.candidate}: not in runs/{REDTEAM} or runs/{CONTROLS}")


def shipped_kernels(root: Path | None = None) -> list[CorpusKernel]:
    """Every red-team and control candidate under `root/runs` (default: the shipped
    corpus), in discovery order."""
    config = RunConfig(root=root)
    cases = [_on_any_device(c, config.device)
             for c in manager().hook.kdiff_discover(bench=BENCH, config=config)]
    broken = [c for c in cases if c.discovery_error]
    if broken:
        raise HeaderError(broken[0].discovery_error)
    return [_kernel(c) for c in cases]


def _on_any_device(case: Case, device: str) -> Case:
    """The case as found, whichever device it needs: discovery lists a kernel that `device`
    does not judge as an error row saying so, while the corpus holds every kernel
    (`CorpusKernel.runs_on` says where each is judged)."""
    why = manager().hook.kdiff_not_judged_on(bench=BENCH, case=case, device=device)
    if why is not None and case.discovery_error == why:
        return dataclasses.replace(case, discovery_error=None)
    return case


def problems(root: Path | None = None) -> dict[tuple[int, int], Path]:
    """(level, problem id) -> problem file."""
    return manager().hook.kdiff_problem_files(bench=BENCH, root=root)


REFERENCE_CANDIDATE = '''"""
kdiff-control: the reference submitted as its own candidate
"""
from pathlib import Path

_source = Path({problem!r})
exec(compile(_source.read_text(), str(_source), "exec"))
ModelNew = Model  # noqa: F821 - defined by the problem's source
'''


def reference_kernels(directory: Path, root: Path | None = None) -> list[CorpusKernel]:
    """Each problem's own `Model` as a candidate: a small file in `directory` that executes
    the problem's source and names its Model `ModelNew` (no copy of the problem is kept)."""
    out = []
    for (level, pid), problem in sorted(problems(root).items()):
        candidate = directory / f"level_{level}_problem_{pid}_reference.py"
        candidate.write_text(REFERENCE_CANDIDATE.format(problem=str(problem.resolve())))
        case = Case(id=f"{REFERENCES}/level_{level}_problem_{pid}", problem=problem,
                    candidate=candidate, metadata={"run": REFERENCES, "level": level,
                                                   "problem_id": pid, "problem": problem.stem})
        out.append(CorpusKernel(case, REFERENCES, "the reference submitted as its own candidate"))
    return out
