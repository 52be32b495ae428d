"""`kdiff calibrate`: both sides of every gate's bound, measured on the shipped corpus.

The honest side is every control and every problem's reference submitted as its own
candidate; the defective side is the red team. Per gate this reports the honest noise (the
largest error of an honest kernel that passed, in units of the bound: GateResult.worst_ratio),
the smallest error among the red-team kernels that the gate must catch, and the margin
between the two; then the red team's recall, the controls' pass rate, and every surprise: a
control rejected, a red-team kernel missed by a gate it names or caught by one it does not.

`judge_corpus` does the judging (the expensive part, once); `calibration` only reads verdicts,
so the test suite shares one judged run between its calibration and three-state tests.
"""
from __future__ import annotations

import math
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from kdiff.commands.corpus import CorpusKernel, problems, reference_kernels, shipped_kernels
from kdiff.data.model import GateClass, GateResult, Status, Verdict
from kdiff.gates.registry import select
from kdiff.judging.context import GateContext, GateOptions
from kdiff.judging.runconfig import RunConfig

# Red-team kernels must pass this native check: the tolerance most published results used.
PRESET = "kernelbench-v0.1"

# A thresholded gate is calibrated when the smallest defective error is at least 4x the largest
# honest one: the bound (1.0) then sits between the two with room on both sides, as wide as
# the factor REFERENCE_MARGIN = 2 that the reference itself must already keep below the bound.
REQUIRED_MARGIN = 4.0


@dataclass
class JudgedKernel:
    kernel: CorpusKernel
    verdict: Verdict

    @property
    def id(self) -> str:
        return self.kernel.id

    @property
    def caught_by(self) -> list[str]:
        return self.verdict.failed_gates

    def result(self, gate: str) -> GateResult | None:
        return self.verdict.gates.get(gate)


@dataclass
class CorpusRun:
    """The corpus judged once: every kernel's verdict, and the kernels this device cannot
    judge (a defect that shows only on a GPU)."""

    device: str
    gates: list[str]  # the gates judged, in catalogue order
    judged: list[JudgedKernel]
    not_run: list[tuple[CorpusKernel, str]]
    seconds: float


def judge_corpus(device: str, gates: list[str] | None = None, jobs: int = 1,
                 root: Path | None = None,
                 progress: Callable[[Verdict], None] | None = None) -> CorpusRun:
    """Judge every red-team kernel, control and reference (as its own candidate) of the
    corpus through `gates` (all twelve by default), with the native check under PRESET."""
    from kdiff.commands.run import judge_all
    from kdiff.judging.plugins import manager
    start = time.monotonic()
    config = RunConfig(native=PRESET, gates=gates, gate_options=GateOptions(device=device),
                       jobs=jobs)
    with tempfile.TemporaryDirectory(prefix="kdiff-references-") as tmp:
        kernels = shipped_kernels(root) + reference_kernels(Path(tmp), root)
        runnable = [k for k in kernels if k.runs_on(device)]
        not_run = [(k, f"requires {k.requires}") for k in kernels if not k.runs_on(device)]
        by_id = {k.id: k for k in runnable}
        judged = []
        for verdict in judge_all([k.case for k in runnable], config, manager(), PRESET):
            if progress is not None:
                progress(verdict)
            judged.append(JudgedKernel(by_id[verdict.case.id], verdict))
    order = {k.id: i for i, k in enumerate(runnable)}
    judged.sort(key=lambda j: order[j.id])
    return CorpusRun(device, [g.id for g in select(gates)], judged, not_run,
                     time.monotonic() - start)


def native_acceptance(kernel: CorpusKernel, presets: list[str], device: str
                      ) -> dict[str, bool | None]:
    """The kernel's native verdict under each preset (one worker, the same inputs as in
    judge_corpus): which benchmarks' own checks a red-team kernel gets through."""
    from kdiff.data.problem import load_problem
    from kdiff.judging.plugins import manager
    from kdiff.sandbox.process import CandidateFailure
    from kdiff.sandbox.replies import CheckedCandidate
    pm, case = manager(), kernel.case
    out: dict[str, bool | None] = {}
    with CheckedCandidate(case.problem, case.candidate, device) as candidate:
        ctx = GateContext(load_problem(case.problem), candidate, GateOptions(device=device))
        for preset in presets:
            try:
                out[preset] = pm.hook.kdiff_native_check(bench=case.bench, case=case, ctx=ctx,
                                                         preset=preset).accept
            except CandidateFailure:
                out[preset] = False
    return out


# -- reading the verdicts -------------------------------------------------------------------
@dataclass
class Point:
    """One kernel's error on one gate, in units of the gate's bound. `math.inf` when the
    kernel raised or produced non-finite values where the oracle is finite."""

    kernel: str
    ratio: float | None  # None: the gate judged nothing (skip, under-specified, error)
    status: Status
    signature: str | None = None

    @property
    def label(self) -> str:
        if self.ratio is None:
            return self.status.value
        if math.isinf(self.ratio):
            return f"inf ({self.signature or 'non-finite'})"
        return f"{self.ratio:.3g}"


@dataclass
class Miss:
    kernel: str
    gate: str
    expected_signature: str | None
    got: GateResult | None

    def describe(self) -> str:
        if self.got is None:
            return f"{self.kernel}: {self.gate} was not run"
        want = f" with {self.expected_signature}" if self.expected_signature else ""
        got = self.got.status.value + (f" ({self.got.signature})" if self.got.signature else "")
        return f"{self.kernel}: {self.gate} should fail{want}, got {got}"


@dataclass
class GateCalibration:
    gate: str
    name: str
    klass: GateClass
    honest: list[Point] = field(default_factory=list)  # passing honest runs
    defective: list[Point] = field(default_factory=list)  # red team that names this gate
    rejected_controls: list[Point] = field(default_factory=list)

    @property
    def thresholded(self) -> bool:
        return self.klass is GateClass.THRESHOLDED

    @property
    def honest_noise(self) -> Point | None:
        measured = [p for p in self.honest if p.ratio is not None]
        return max(measured, key=lambda p: p.ratio) if measured else None

    @property
    def smallest_defective(self) -> Point | None:
        measured = [p for p in self.defective if p.ratio is not None]
        return min(measured, key=lambda p: p.ratio) if measured else None

    @property
    def margin(self) -> float | None:
        """Smallest defective error over largest honest error (inf when honest runs are
        exact); None when either side has no measurement."""
        if not self.thresholded:
            return None
        noise, defect = self.honest_noise, self.smallest_defective
        if noise is None or defect is None:
            return None
        return math.inf if noise.ratio == 0 else defect.ratio / noise.ratio

    @property
    def caught(self) -> int:
        return sum(p.status is Status.FAIL for p in self.defective)

    def to_json(self) -> dict[str, Any]:
        noise, defect = self.honest_noise, self.smallest_defective
        return {"name": self.name, "class": self.klass.value,
                "honest_noise": _finite_or_none(noise.ratio) if noise else None,
                "honest_noise_kernel": noise.kernel if noise else None,
                "honest_runs": len(self.honest),
                "smallest_defective": defect.ratio if defect else None,
                "smallest_defective_kernel": defect.kernel if defect else None,
                "margin": self.margin,
                "must_catch": len(self.defective), "caught": self.caught,
                "rejected_controls": [p.kernel for p in self.rejected_controls]}


def _finite_or_none(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


@dataclass
class Calibration:
    run: CorpusRun
    gates: dict[str, GateCalibration]
    misses: list[Miss]  # a red-team kernel that a gate it names did not catch as promised
    unexpected: list[tuple[str, str, GateResult]]  # red team caught by a gate it does not name
    # red-team kernel id -> native preset -> accept (filled by `kdiff calibrate`)
    native_by_preset: dict[str, dict[str, bool | None]] = field(default_factory=dict)

    @property
    def redteam(self) -> list[JudgedKernel]:
        return [j for j in self.run.judged if not j.kernel.honest]

    @property
    def honest(self) -> list[JudgedKernel]:
        return [j for j in self.run.judged if j.kernel.honest]

    @property
    def recall(self) -> tuple[int, int]:
        """(caught, total) over (red-team kernel, gate it names) pairs."""
        total = sum(len(j.kernel.expected) for j in self.redteam)
        return total - len(self.misses), total

    @property
    def control_pass(self) -> tuple[int, int]:
        return sum(j.verdict.verifier_accept is True for j in self.honest), len(self.honest)

    @property
    def rejected_controls(self) -> list[JudgedKernel]:
        return [j for j in self.honest if j.verdict.verifier_accept is not True]

    @property
    def narrow_margins(self) -> list[GateCalibration]:
        return [g for g in self.gates.values()
                if g.margin is not None and g.margin < REQUIRED_MARGIN]

    @property
    def ok(self) -> bool:
        return not (self.misses or self.rejected_controls or self.narrow_margins)

    def to_json(self) -> dict[str, Any]:
        return {
            "device": self.run.device, "native": PRESET,
            "seconds": round(self.run.seconds, 1), "required_margin": REQUIRED_MARGIN,
            "gates": {gid: g.to_json() for gid, g in self.gates.items()},
            "redteam": [{"id": j.id, "name": j.kernel.name,
                         "expected_gates": [e.gate for e in j.kernel.expected],
                         "caught_by": j.caught_by, "native_accept": j.verdict.native.accept,
                         **({"native_accept_by_preset": self.native_by_preset[j.id]}
                            if j.id in self.native_by_preset else {})}
                        for j in self.redteam],
            "controls": [{"id": j.id, "name": j.kernel.name,
                          "verifier_accept": j.verdict.verifier_accept,
                          "native_accept": j.verdict.native.accept} for j in self.honest],
            "not_run": [{"id": k.id, "reason": why} for k, why in self.run.not_run],
            "misses": [m.describe() for m in self.misses],
            "unexpected": [{"id": kid, "gate": gid, "signature": r.signature}
                           for kid, gid, r in self.unexpected],
        }


def _point(kernel: str, result: GateResult) -> Point:
    ratio = result.worst_ratio
    if result.status is Status.FAIL and ratio is None:
        ratio = math.inf  # raised, crashed, hung, wrong shape: no finite error to show
    if result.status not in (Status.PASS, Status.FAIL):
        ratio = None
    return Point(kernel, ratio, result.status, result.signature)


def calibration(run: CorpusRun) -> Calibration:
    gates = {g.id: GateCalibration(g.id, g.name, g.klass) for g in select(run.gates)}
    misses: list[Miss] = []
    unexpected: list[tuple[str, str, GateResult]] = []
    for j in run.judged:
        for gid, result in j.verdict.gates.items():
            cal = gates.get(gid)
            if cal is None:
                continue
            if j.kernel.honest:
                if result.status is Status.PASS and result.worst_ratio is not None:
                    cal.honest.append(_point(j.id, result))
                elif result.status is Status.FAIL:
                    cal.rejected_controls.append(_point(j.id, result))
            elif gid not in j.kernel.expected_gates and result.status is Status.FAIL:
                unexpected.append((j.id, gid, result))
        if j.kernel.honest:
            continue
        for exp in j.kernel.expected:
            result = j.result(exp.gate)
            if result is not None and exp.gate in gates:
                gates[exp.gate].defective.append(_point(j.id, result))
            caught = result is not None and result.status is Status.FAIL and (
                exp.signature is None or result.signature == exp.signature)
            if not caught:
                misses.append(Miss(j.id, exp.gate, exp.signature, result))
    return Calibration(run, gates, misses, unexpected)


# -- output ---------------------------------------------------------------------------------
def _ratio(x: float | None) -> str:
    if x is None:
        return "-"
    return "inf" if math.isinf(x) else f"{x:.3g}"


def table(cal: Calibration) -> str:
    from tabulate import tabulate
    rows = []
    for g in cal.gates.values():
        noise, defect = g.honest_noise, g.smallest_defective
        rows.append([g.gate, g.klass.value,
                     f"{_ratio(noise.ratio)} ({noise.kernel})" if noise else "-",
                     f"{defect.label} ({defect.kernel})" if defect else "-",
                     _ratio(g.margin) + ("x" if g.margin is not None else ""),
                     f"{g.caught}/{len(g.defective)}",
                     len(g.rejected_controls) or ""])
    caught, total = cal.recall
    passed, honest = cal.control_pass
    lines = [tabulate(rows, headers=["gate", "class", "honest noise (x bound)",
                                     "smallest defective (x bound)", "margin", "caught",
                                     "controls rejected"]),
             "",
             f"red-team recall: {caught}/{total} (kernel, named gate) pairs caught "
             f"({len(cal.redteam)} red-team kernels)",
             f"controls' pass rate: {passed}/{honest} (controls and references)",
             *_native_lines(cal),
             f"required margin for thresholded gates: {REQUIRED_MARGIN:g}x; native check: "
             f"{PRESET}; device: {cal.run.device}; judged in {cal.run.seconds:.0f} s"]
    for k, why in cal.run.not_run:
        lines.append(f"not run here: {k.id} ({why})")
    for m in cal.misses:
        lines.append(f"MISSED: {m.describe()}")
    for j in cal.rejected_controls:
        why = "; ".join(f"{gid} {r.signature or ''}: {r.detail[:160]}"
                        for gid, r in j.verdict.gates.items() if r.status is Status.FAIL)
        lines.append(f"CONTROL REJECTED: {j.id}: {why or j.verdict.error or 'verdict open'}")
    for g in cal.narrow_margins:
        lines.append(f"NARROW MARGIN: {g.gate} {g.margin:.3g}x < {REQUIRED_MARGIN:g}x")
    for kid, gid, r in cal.unexpected:
        lines.append(f"also caught: {kid} by {gid} ({r.signature})")
    return "\n".join(lines)


def _native_lines(cal: Calibration) -> list[str]:
    if not cal.native_by_preset:
        return []
    presets = sorted({p for by in cal.native_by_preset.values() for p in by})
    counts = ", ".join(f"{p} {sum(by.get(p) is True for by in cal.native_by_preset.values())}"
                       f"/{len(cal.native_by_preset)}" for p in presets)
    lines = [f"red team accepted by the native check: {counts}"]
    for kid, by in cal.native_by_preset.items():
        refused = [p for p, ok in by.items() if ok is not True]
        if refused:
            lines.append(f"  {kid}: not accepted under {', '.join(refused)}")
    return lines


def axis_range(gates: list[GateCalibration]) -> tuple[float, float]:
    """The plot's error axis: the region that decides every margin, a decade either side.
    A margin is the smallest defective error over the largest honest one, so errors beyond
    the largest of the gates' smallest defective errors, or below the smallest of their
    largest honest errors, decide nothing; the axis always holds the bound's required room
    on both sides, [1/REQUIRED_MARGIN, REQUIRED_MARGIN]."""
    def finite(points: list[Point | None]) -> list[float]:
        return [p.ratio for p in points if p is not None and p.ratio and math.isfinite(p.ratio)]
    defects = finite([g.smallest_defective for g in gates]) + [REQUIRED_MARGIN]
    noise = finite([g.honest_noise for g in gates]) + [1 / REQUIRED_MARGIN]
    return (10.0 ** (math.floor(math.log10(min(noise))) - 1),
            10.0 ** (math.ceil(math.log10(max(defects))) + 1))


def plot(cal: Calibration, path: Path) -> None:
    """Per thresholded gate, honest (circles) and defective (crosses) errors on one log axis
    (axis_range), the bound at 1.0. An error beyond the axis sits at its edge, labelled with
    its value: infinite ones (raised, non-finite) and huge ones at the right, exact and tiny
    ones at the left."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    gates = [g for g in cal.gates.values() if g.thresholded]
    lo, hi = axis_range(gates)
    fig, axes = plt.subplots(len(gates), 1, figsize=(9, 1.3 * len(gates) + 1), sharex=True,
                             squeeze=False)
    for ax, g in zip(axes[:, 0], gates):
        ax.axvline(1.0, color="black", linewidth=1)
        for row, (points, marker, color) in enumerate(((g.honest, "o", "tab:green"),
                                                       (g.defective, "x", "tab:red"))):
            for p in points:
                if p.ratio is None:
                    continue
                x = min(max(p.ratio, lo), hi)
                ax.scatter([x], [row], marker=marker, color=color, s=30, clip_on=False)
                if p.ratio > hi and (math.isinf(p.ratio) or row == 1):
                    ax.annotate(p.label, (x, row), textcoords="offset points", xytext=(-4, 6),
                                ha="right", fontsize=6, color=color)
        ax.set_xscale("log")
        ax.set_xlim(lo, hi)
        ax.set_ylim(-0.7, 1.7)
        ax.set_yticks([0, 1], ["honest", "defective"])
        ax.set_title(f"{g.gate} {g.name}: margin {_ratio(g.margin)}x", fontsize=8, loc="left")
    axes[-1, 0].set_xlabel("error in units of the bound (1.0 = the bound; at the right edge: "
                           "larger, labelled; at the left edge: smaller, or exact)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def calibrate(device: str | None, jobs: int | None, json_path: Path | None = None,
              plot_path: Path | None = None) -> int:
    """Judge the shipped corpus on `device` (None: cuda when available) with `jobs` judges
    (None: as many as the device allows), print the calibration table and write it as JSON
    and as a plot where asked; exit status 1 where the corpus is missed, a control
    rejected or a margin too narrow."""
    from kdiff.commands.executor import default_jobs
    from kdiff.commands.invocation import EXIT_FOUND, EXIT_OK, device_name, preset_text
    from kdiff.judging.plugins import manager
    from kdiff.reports.json_report import dumps
    from kdiff.reports.progress import Header, Progress
    device = device_name(device)
    kernels, references = shipped_kernels(), problems()
    jobs = jobs or default_jobs(device)
    print(Header("kdiff calibrate")
          .add("kernels", f"{len(kernels)} shipped (controls and red team) and "
               f"{len(references)} references as their own candidates")
          .add("native check", preset_text(manager(), "kernelbench", PRESET))
          .add("device", device).add("judges", f"{jobs} at once").add("gates", "all twelve")
          .render(), file=sys.stderr, flush=True)
    progress = Progress(len(kernels) + len(references))
    run = judge_corpus(device, jobs=jobs, progress=progress)
    progress.close()
    cal = calibration(run)
    presets = list(manager().hook.kdiff_native_presets(bench="kernelbench"))
    print(f"kdiff calibrate: the native check under {', '.join(presets)} for each of "
          f"{len(cal.redteam)} red-team kernels", file=sys.stderr, flush=True)
    # One worker per red-team kernel, `jobs` at a time: the work is in the workers, and one
    # by one this pass would take longer than the whole corpus's twelve gates.
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        accepted = pool.map(lambda j: native_acceptance(j.kernel, presets, device), cal.redteam)
        cal.native_by_preset.update(zip((j.id for j in cal.redteam), accepted))
    print(table(cal))
    if json_path:
        json_path.write_text(dumps(cal.to_json()))
    if plot_path:
        plot(cal, plot_path)
    return EXIT_OK if cal.ok else EXIT_FOUND
