"""What every benchmark's own check (an adapter's native check) shares: its trials run in
order, the first that fails decides and is named in the verdict, and a kernel that passes every
trial is accepted; a failure of the candidate fails it at that trial, a failure of the
reference or of the machine leaves it undecided.

A trial ends early by raising `TrialEnd` (`rejected`, `undecided`); the adapter's phrasing of
each reason is its own, as the benchmark words it.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, TypeVar

import torch

from kdiff.data.model import NativeVerdict
from kdiff.data.seeding import random_state, set_random_state
from kdiff.judging.context import (
    BENCHMARK_SEED,
    NATIVE,
    GateContext,
    MachineTooBusy,
    NativeAnswer,
)
from kdiff.sandbox.process import CandidateFailure

T = TypeVar("T")


class TrialEnd(Exception):
    """Ends a native check at the current trial: `accept` False (the benchmark fails the
    kernel) or None (it cannot judge it: a broken reference, a machine too busy to time it)."""

    def __init__(self, accept: bool | None, reason: str) -> None:
        super().__init__(reason)
        self.accept, self.reason = accept, reason


def rejected(reason: str) -> TrialEnd:
    return TrialEnd(False, reason)


def undecided(reason: str) -> TrialEnd:
    return TrialEnd(None, reason)


@dataclass(frozen=True)
class NativeCheck:
    """One preset's check: its verdicts, and its loop over trials."""

    preset: str

    def verdict(self, accept: bool | None, reason: str, trial: int | None = None
                ) -> NativeVerdict:
        return NativeVerdict(accept, self.preset, "kdiff", trial, reason)

    def run(self, trials: Iterable[T], judge: Callable[[T], None], passed: str,
            label: Callable[[int, T], str] | None = None) -> NativeVerdict:
        """`judge(trial)` for each trial in order; the first that raises TrialEnd decides,
        its index the verdict's failed trial and its reason prefixed by `label(index, trial)`
        where one is given. Every trial judged: accepted, with `passed` as the reason."""
        for index, trial in enumerate(trials):
            try:
                judge(trial)
            except TrialEnd as end:
                where = f"{label(index, trial)}: " if label else ""
                return self.verdict(end.accept, where + end.reason, index)
        return self.verdict(True, passed)


@contextlib.contextmanager
def candidate_part(describe: Callable[[CandidateFailure], str],
                   failures: tuple[type[CandidateFailure], ...] = (CandidateFailure,)
                   ) -> Iterator[None]:
    """The candidate's part of a trial: one of `failures` fails the kernel here, as
    `describe(exc)` words it (a failure not listed goes on to the judge, which fails the
    kernel with the failure's signature); a machine too busy to time the call leaves the
    check undecided."""
    try:
        yield
    except failures as exc:
        raise rejected(describe(exc)) from None
    except MachineTooBusy as exc:
        raise undecided(str(exc)) from None


def call_candidate(ctx: GateContext, inputs: list[Any]) -> list[torch.Tensor]:
    """One call of the candidate on `inputs`, at their own dtypes, as its worker returns the
    outputs (what crosses to the worker is a copy of each tensor). The call and its answer
    are recorded for CMP-01 (`GateContext.native_answers`): the harness's inputs are its
    own fixed draws (GPU MODE's tests with their seeds, SOL-ExecBench's rounds from seed
    200), which a candidate can draw itself and answer wrongly alone
    (tests/hostile/gpumode_wrong_on_the_harness_tests.py,
    solexecbench_wrong_on_the_harness_rounds.json). The inputs are kept as sent: the
    harness's check runs the reference next on the same tensors, which may write into them
    (GPU MODE's output buffers)."""
    payload = [x.detach().cpu() if isinstance(x, torch.Tensor) else x for x in inputs]
    # A device tensor's payload is a host copy of its own already; a host tensor's is itself.
    sent = [p.clone() if isinstance(x, torch.Tensor) and x.device.type == "cpu" else p
            for p, x in zip(payload, inputs)]
    # The harness draws its later trials from the stream its seed began (SOL-ExecBench's
    # rounds, GPU MODE's generate_input without a generator of its own); building the
    # instance on first use seeds torch (GateContext.init_inputs), which set that stream back
    # to seed 42 after the first trial (tests/hostile/solexecbench_wrong_after_the_first_round.json).
    state = random_state(ctx.device)
    key = ctx.candidate_key()
    set_random_state(ctx.device, state)
    outputs = ctx.candidate.request("call", key=key, inputs=payload)["outputs"]
    ctx.native_answers.append(NativeAnswer(sent, BENCHMARK_SEED, NATIVE, outputs))
    return outputs


def reference_broken(exc: Exception) -> TrialEnd:
    """The reference raised on the trial's inputs: the problem is broken there, not the
    kernel."""
    return undecided(f"the reference does not run: {type(exc).__name__}: {exc}")
