"""kdiff in a benchmark's own test suite (the `pytest11` entry point `kdiff`).

Two ways in:
- the fixture `kdiff_verify(problem, candidate, gates=None, native=None, device=None,
  call_timeout=None)` judges one candidate and returns its `Verdict`, for tests that assert
  contracts themselves (`assert v.verifier_accept`, `assert v.gates["EXC-01"].status ...`);
- the options `--kdiff-problem REF.py --kdiff-candidate NEW.py [--kdiff-candidate ...]
  [--kdiff-gates ID,...] [--kdiff-native PRESET] [--kdiff-device cpu|cuda]` add one test per
  candidate and gate, `kdiff[NEW.py][GATE]`: it passes when the gate passes, fails with the
  gate's signature and detail, skips when the gate could not judge (skip, under-specified).
  Given without test paths, only these tests run.

Nothing heavy is imported until a kdiff test runs: the plugin loads with every pytest session.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import pytest

if TYPE_CHECKING:
    from kdiff.data.model import Verdict


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kdiff", "kdiff: verify candidate kernels as tests")
    group.addoption("--kdiff-problem", metavar="REF.py", type=Path,
                    help="the reference problem (KernelBench format)")
    group.addoption("--kdiff-candidate", metavar="NEW.py", type=Path, action="append",
                    default=[], help="a candidate to verify (repeat for more)")
    group.addoption("--kdiff-gates", metavar="ID,...", help="only these gates")
    group.addoption("--kdiff-native", metavar="PRESET", help="native-check preset")
    group.addoption("--kdiff-device", choices=["cpu", "cuda"], help="where candidates run")
    group.addoption("--kdiff-call-timeout", metavar="S", type=float,
                    help="seconds one call of a candidate may take")


def verify(problem: Path | str, candidate: Path | str, gates: list[str] | None = None,
           native: str | None = None, device: str | None = None,
           call_timeout: float | None = None) -> "Verdict":
    """Judges one candidate as `kdiff verify` does; kdiff's own errors propagate."""
    from kdiff.commands.invocation import make_config
    from kdiff.data.model import Case
    from kdiff.judging.plugins import manager
    from kdiff.verdicts.judge import judge_case, native_preset
    problem, candidate = Path(problem), Path(candidate)
    args = argparse.Namespace(native=native, gates=",".join(gates) if gates else None,
                              device=device, dtypes=None, call_timeout=call_timeout,
                              case_timeout=None)
    config = make_config(args, "kernelbench")
    pm = manager()
    case = Case(id=f"{problem.stem}::{candidate.stem}", problem=problem, candidate=candidate)
    return judge_case(case, config, pm, native_preset(pm, config))


@pytest.fixture
def kdiff_verify() -> Callable[..., "Verdict"]:
    """`kdiff_verify(problem, candidate, gates=[...]) -> Verdict`."""
    return verify


class ContractViolation(Exception):
    """A gate rejected the candidate: the test's failure, reported in one line."""


class KdiffItem(pytest.Item):
    def __init__(self, *, candidate: Path, gate: str, verdicts: dict[Path, Any],
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.candidate, self.gate, self.verdicts = candidate, gate, verdicts

    def runtest(self) -> None:
        from kdiff.data.model import Status
        options = self.config.option
        if self.candidate not in self.verdicts:
            self.verdicts[self.candidate] = verify(
                options.kdiff_problem, self.candidate, _gate_ids(self.config),
                options.kdiff_native, options.kdiff_device, options.kdiff_call_timeout)
        verdict = self.verdicts[self.candidate]
        if verdict.error:
            raise ContractViolation(f"not judged: {verdict.error}")
        result = verdict.gates[self.gate]
        if result.status is Status.FAIL:
            raise ContractViolation(f"{self.gate} {result.signature}: {result.detail}")
        if result.status is Status.ERROR:
            raise RuntimeError(f"{self.gate}: {result.detail}")
        if result.status is not Status.PASS:
            pytest.skip(f"{self.gate} {result.status.value}: {result.detail}")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
                     ) -> str:
        if isinstance(excinfo.value, ContractViolation):
            return f"{self.candidate}: {excinfo.value}"
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.candidate, None, f"kdiff[{self.candidate.name}][{self.gate}]"


def _gate_ids(config: pytest.Config) -> list[str]:
    from kdiff.gates.registry import checked_ids
    wanted = config.option.kdiff_gates
    return checked_ids([g.strip() for g in wanted.split(",")] if wanted else None)


def pytest_report_header(config: pytest.Config) -> list[str]:
    """The same header as `kdiff run`'s: what will be judged, and how."""
    options = config.option
    if not options.kdiff_candidate:
        return []
    from kdiff.commands.invocation import device_name, preset_text
    from kdiff.judging.plugins import manager
    from kdiff.judging.runconfig import RunConfig
    from kdiff.reports.progress import Header
    from kdiff.verdicts.judge import native_preset
    pm = manager()
    try:
        preset = native_preset(pm, RunConfig(native=options.kdiff_native))
        gates = _gate_ids(config)
    except KeyError:
        return []  # reported as a usage error at collection
    return [Header("kdiff")
            .add("problem", options.kdiff_problem)
            .add("kernels", len(options.kdiff_candidate))
            .add("native check", preset_text(pm, "kernelbench", preset))
            .add("device", device_name(options.kdiff_device))
            .add("gates", ",".join(gates))
            .add("tests", len(options.kdiff_candidate) * len(gates)).render()]


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    candidates = config.option.kdiff_candidate
    if not candidates:
        return
    if config.option.kdiff_problem is None:
        raise pytest.UsageError("--kdiff-candidate needs --kdiff-problem")
    for path in [config.option.kdiff_problem, *candidates]:
        if not path.is_file():
            raise pytest.UsageError(f"{path}: no such file")
    try:
        gates = _gate_ids(config)
    except KeyError as exc:
        raise pytest.UsageError(str(exc.args[0])) from None
    verdicts: dict[Path, Any] = {}  # one judgement per candidate, shared by its gates
    ours = [KdiffItem.from_parent(session, name=f"kdiff[{c.name}][{g}]",
                                  nodeid=f"kdiff[{c.name}][{g}]", candidate=c, gate=g,
                                  verdicts=verdicts) for c in candidates for g in gates]
    # Collected as any test is, so that "collected N items" counts them.
    config.hook.pytest_collectreport(report=pytest.CollectReport(
        "kdiff", "passed", None, ours))
    if config.args_source != pytest.Config.ArgsSource.ARGS:  # no test paths named
        if items:
            config.hook.pytest_deselected(items=list(items))
        items[:] = ours
    else:
        items.extend(ours)
