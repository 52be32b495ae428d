"""Judging one configuration: a copy of the candidate with that configuration, through kdiff's
gates (kdiff.verdicts.judge.judge_case: its own confined worker), the verdict cached per
configuration."""
from __future__ import annotations

import hashlib
import tempfile
import time
from pathlib import Path
from typing import Callable

from kdiff.data.model import Case, Status, Verdict
from kdiff.judging.runconfig import RunConfig
from kdiff.tune.result import Judgement, Outcome
from kdiff.tune.space import Config, Space, configured_source

JudgeFn = Callable[[Config], Judgement]


def judgement_of(verdict: Verdict, seconds: float) -> Judgement:
    """A failed gate rejects; a gate that errored leaves it undecided (neither trusted nor
    timed as a win); a candidate that does not load is rejected (its failure, not kdiff's)."""
    if verdict.error:
        outcome = Outcome.WRONG if verdict.error_kind == "candidate" else Outcome.UNDECIDED
        return Judgement(outcome, (f"load:{verdict.error.splitlines()[0]}",), seconds)
    failing = tuple(f"{gid}:{g.signature or g.status.value}" for gid, g in verdict.gates.items()
                    if g.status in (Status.FAIL, Status.ERROR))
    accept = verdict.verifier_accept
    outcome = {True: Outcome.CORRECT, False: Outcome.WRONG, None: Outcome.UNDECIDED}[accept]
    return Judgement(outcome, failing, seconds)


class ConfigJudge:
    """judge(config): the configured candidate's verdict under `config`'s gates. Verdicts are
    cached by the knobs that can change an output: on the CPU the interpreter ignores launch
    options (num_warps, num_stages), so configurations differing only there share one."""

    def __init__(self, problem: Path, candidate: Path, space: Space, config: RunConfig,
                 workdir: Path | None = None) -> None:
        """workdir: where the configured copies are written (default: a new temporary folder,
        left for the caller to inspect)."""
        from kdiff.judging.plugins import manager
        self.problem, self.candidate, self.space, self.config = problem, candidate, space, config
        self.source = Path(candidate).read_text()
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="kdiff-tune-"))
        self.pm = manager()
        self.cache: dict[Config, Judgement] = {}
        self.ignored = ({k.name for k in space.knobs if k.launch_option}
                        if config.device == "cpu" else set())

    def key(self, config: Config) -> Config:
        return tuple((n, v) for n, v in config if n not in self.ignored)

    def write(self, config: Config) -> Path:
        """The candidate under `config`, as a file of its own (named by the configuration)."""
        text = configured_source(self.source, config)
        digest = hashlib.sha256(text.encode()).hexdigest()[:12]
        path = self.workdir / f"{Path(self.candidate).stem}_{digest}.py"
        path.write_text(text)
        return path

    def __call__(self, config: Config) -> Judgement:
        from kdiff.verdicts.judge import judge_case
        key = self.key(config)
        if key not in self.cache:
            path = self.write(config)
            start = time.perf_counter()
            verdict = judge_case(Case(id=f"{Path(self.problem).stem}::{path.stem}",
                                      problem=Path(self.problem), candidate=path),
                                 self.config, self.pm)
            self.cache[key] = judgement_of(verdict, time.perf_counter() - start)
        return self.cache[key]
