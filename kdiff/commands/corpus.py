"""The shipped corpus (`kdiff.kernels`): its problems, its red-team and control candidates, and
what their headers promise.

Discovery and the raw `key: value` header fields come from the KernelBench adapter (the corpus
is in KernelBench layout); this module reads their meaning: which run a kernel belongs to,
which gates a red-team kernel must fail (and with which signature), and where it can be
judged. It also makes each problem's reference into a candidate of its own, the positive
control every problem has.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kdiff.adapters.kernelbench.discover import discover, problem_files, runs_on, shipped_corpus
from kdiff.data.model import Case
from kdiff.judging.runconfig import RunConfig

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
        return runs_on(self.case, device)


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
    cases = discover(RunConfig(root=root))
    broken = [c for c in cases if c.discovery_error]
    if broken:
        raise HeaderError(broken[0].discovery_error)
    return [_kernel(c) for c in cases]


def problems(root: Path | None = None) -> dict[tuple[int, int], Path]:
    """(level, problem id) -> problem file."""
    return problem_files(root if root is not None else shipped_corpus())


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
