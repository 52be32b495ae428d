"""RES-01 memory hygiene: no uninitialised memory in the output, no input modified in place,
no dependence on allocator history.

Per input set (the benchmark's own distribution, then signed normal values, which an in-place
`relu_` on non-negative inputs would leave unchanged; each drawn at a seed chosen for the
verdict), three calls in the candidate's worker:
- *history*: right after the worker's copy of the reference ran on these inputs and its
  output was freed (as in the benchmark's harness), unpoisoned: uninitialised memory here may
  hold the reference's answer;
- *decoy*: the same, but the reference ran on another draw of the same distribution: freed
  memory holds a plausible wrong answer. Nothing but the values of uninitialised memory tells
  this call from the history call or the native check's, so a kernel that notices the poison
  below and behaves then gains nothing: here it returns the decoy;
- *poisoned*: after allocator churn, with every `torch.empty*` filled with 0xFF bytes (NaN for
  floats, -1 for integers). A candidate can see the patched factories; the decoy call is the
  one it cannot tell apart.
Poison that reaches the output where the reference has none is `uninitialised_output`; an input
whose bytes after a call (sent back with the outputs, compared with the judge's own copy of
what it sent) changed is `input_mutated` (unless the reference itself modifies that input); the
calls disagreeing beyond rounding is `allocator_history`.
"""
from __future__ import annotations

import functools
import operator
from dataclasses import dataclass, field
from typing import Any

import torch

from kdiff.data.model import GateClass, GateResult, Status
from kdiff.gates.base import Gate, TrialLog, benchmark_draw, chosen_for_verdict, normal_draw
from kdiff.judging.context import (
    CallResult,
    Evaluation,
    GateContext,
    ReferenceFailure,
    check_structure,
)
from kdiff.numerics import tolerance
from kdiff.sandbox.probes import POISON_BYTE

# The decoy call's reference input: another draw of the judged set's distribution (gates.base.
# benchmark_draw, normal_draw). The judged draw itself is chosen for the verdict: RES-01 and
# CMP-02's kept tensors are the only calls whose inputs are read back, so a kernel that makes
# their fixed draws beforehand could write into every other input it is handed
# (tests/hostile/knows_the_judges_hygiene_draws.py).
DECOY_DRAW = 1
CHURN_SEED = 5
# Sources that allocate outside torch's Python factories (a compiled extension's at::empty):
# on the CPU nothing pre-fills the allocator for them, so poison cannot reach their buffers.
COMPILED_MARKERS = ("load_inline", "cpp_extension", "ctypes", "cffi")


def _bytes(t: torch.Tensor) -> torch.Tensor:
    """The raw bytes of a tensor, one row per element."""
    t = t.detach().cpu().contiguous()
    return t.reshape(-1).view(torch.uint8).reshape(t.numel(), t.element_size())


def bitwise_differs(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Per element (flat): True where the bit patterns differ."""
    return (_bytes(a) != _bytes(b)).any(1)


def poisoned(out: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    """Per element (flat): the poison pattern where the reference has no such value. For
    floats any NaN counts (arithmetic on a poisoned NaN keeps it a NaN, not its payload)."""
    if tolerance.inexact(out):  # a complex element is poisoned where a component is
        got = torch.isnan(tolerance.comparable(out.detach().cpu())).reshape(-1)
        want = torch.isnan(tolerance.comparable(ref.detach().cpu().to(out.dtype))).reshape(-1) \
            if tolerance.inexact(ref) else torch.zeros_like(got)
        return got & ~want
    got = (_bytes(out) == POISON_BYTE).all(1)
    want = (_bytes(ref) == POISON_BYTE).all(1) if ref.dtype == out.dtype \
        else torch.zeros_like(got)
    return got & ~want


def _where(flat: int, shape: torch.Size) -> tuple[int, ...]:
    return tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), shape)) if len(shape) \
        else ()


def _clones(inputs: list[Any]) -> list[Any]:
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]


@dataclass
class HygieneLog(TrialLog):
    """The trial log (a trial: one input set) with the inputs the reference modifies itself
    and the differences between calls that stay within rounding."""

    reference_mutates: set[int] = field(default_factory=set)
    rounding_only: list[str] = field(default_factory=list)
    decoys_refused: list[str] = field(default_factory=list)


class MemoryHygiene(Gate):
    id = "RES-01"
    name = "memory hygiene"
    klass = GateClass.TOLERANCE_FREE
    summary = "poisoned allocations never reach the output; inputs untouched; no allocator history"
    shares_calls = False  # each call follows its own allocator history

    def judge(self, ctx: GateContext) -> GateResult:
        log = HygieneLog()
        seed = chosen_for_verdict(ctx)
        sets = [("benchmark inputs", "get_inputs()", benchmark_draw)]
        if ctx.float_input_indices() or any(t.byte_data for t in ctx.templates()):
            sets.append(("signed normal inputs", "normal", normal_draw))
        for label, name, draw in sets:
            failure = self.judge_set(ctx, f"{label} {seed}",
                                     draw(ctx, seed.of(f"{self.id} {name}")),
                                     draw(ctx, DECOY_DRAW), log)
            if failure is not None:
                return failure
        if not log.judged:
            return self.result(Status.SKIP, f"the reference rejects every input set "
                               f"({log.skipped[0]})")
        detail = (f"{', '.join(log.judged_labels)}: no poison in the output, inputs "
                  f"byte-identical, same output after the reference's freed output (on these "
                  f"inputs and on others) and after allocator churn")
        if log.reference_mutates:
            detail += (f"; input(s) {sorted(log.reference_mutates)} not judged for mutation "
                       f"(the reference modifies them itself)")
        if log.decoys_refused:
            detail += (f"; no decoy call on {', '.join(log.decoys_refused)}: the reference "
                       f"refuses the decoy draw")
        if log.rounding_only:
            detail += (f"; the two calls differ within rounding ({log.rounding_only[0]}): "
                       f"nondeterminism, ORD-02's to judge")
        caveat = self.cpu_caveat(ctx)
        return self.result(Status.PASS, detail + (f"; {caveat}" if caveat else ""))

    def judge_set(self, ctx: GateContext, label: str, inputs: list[Any], decoy: list[Any],
                  log: HygieneLog) -> GateResult | None:
        pristine = _clones(inputs)  # as ctx.call sends them, at the problem's own precision
        try:
            log.reference_mutates |= ctx.inputs_the_reference_modifies(pristine)
            ev = ctx.evaluate(_clones(pristine))
        except ReferenceFailure as exc:
            log.skipped.append(f"{label}: {exc}")
            return None
        reference = ctx.reference_key_in_worker()
        history = ctx.call(_clones(pristine), reference_first=reference)
        check_structure(history.outputs, ev.reference)
        decoyed = None
        try:
            # The worker runs the reference on the decoy before the candidate: where the
            # reference refuses that draw (a cholesky of a matrix that is not positive
            # definite), the call would fail for the reference's reason, so it is not made.
            ctx.run_reference(_clones(decoy))
        except ReferenceFailure:
            log.decoys_refused.append(label)
        else:
            decoyed = ctx.call(_clones(pristine), reference_first=reference,
                               reference_inputs=decoy)
            check_structure(decoyed.outputs, ev.reference)
        poison = ctx.call(_clones(pristine), poison=True, churn=True, churn_seed=CHURN_SEED)
        check_structure(poison.outputs, ev.reference)
        log.judged_labels.append(label)
        unpoisoned = [call for call in (history, decoyed) if call is not None]
        return (self.check_poison(label, poison, unpoisoned, ev)
                or self.check_inputs(label, pristine, [*unpoisoned, poison], log)
                or (self.check_history(
                    label, decoyed, "after the reference's freed output on other inputs",
                    history, ev, log) if decoyed is not None else None)
                or self.check_history(label, poison, "after churn, poisoned", history, ev,
                                      log))

    def check_poison(self, label: str, poison: CallResult, unpoisoned: list[CallResult],
                     ev: Evaluation) -> GateResult | None:
        """`unpoisoned`: the history call, then the decoy call where one was made."""
        history = unpoisoned[0]
        for i, (out, ref) in enumerate(zip(poison.outputs, ev.reference)):
            hit = poisoned(out, ref)
            # A NaN every unpoisoned call produces too is the candidate's own: the value gates
            # own it. One call's is not enough: its uninitialised memory may hold a NaN by
            # chance (freed bytes, an earlier call's poison), and the poison would go unseen.
            own = functools.reduce(operator.and_,
                                   (poisoned(call.outputs[i], ref) for call in unpoisoned))
            hit &= ~own
            if bool(hit.any()):
                flat = int(hit.nonzero()[0])
                return self.result(
                    Status.FAIL, f"{label}, output {i}: {int(hit.sum())} of {out.numel()} "
                    f"elements are poison from uninitialised memory (first at index "
                    f"{_where(flat, out.shape)}: reference {ref.reshape(-1)[flat].item():.6g}, "
                    f"got {out.reshape(-1)[flat].item():.6g}); unpoisoned, right after the "
                    f"reference, the same element was "
                    f"{history.outputs[i].reshape(-1)[flat].item():.6g}",
                    "uninitialised_output")
        return None

    def check_inputs(self, label: str, pristine: list[Any], calls: list[CallResult],
                     log: HygieneLog) -> GateResult | None:
        pairs = [(i, before, now) for call in calls
                 for i, (before, now) in enumerate(zip(pristine, call.inputs_after or []))]
        for i, before, now in pairs:
            if not isinstance(before, torch.Tensor) or now is None or i in log.reference_mutates:
                continue
            if (now.shape, now.dtype) != (before.shape, before.dtype):
                return self.result(Status.FAIL, f"{label}: input {i} changed in place from "
                                   f"{tuple(before.shape)} {before.dtype} to {tuple(now.shape)} "
                                   f"{now.dtype}", "input_mutated")
            changed = bitwise_differs(now, before)
            if bool(changed.any()):
                flat = int(changed.nonzero()[0])
                return self.result(
                    Status.FAIL, f"{label}: input {i} modified in place: {int(changed.sum())} of "
                    f"{before.numel()} elements changed (first at index "
                    f"{_where(flat, before.shape)}: was {before.reshape(-1)[flat].item():.6g}, "
                    f"now {now.reshape(-1)[flat].item():.6g})", "input_mutated")
        return None

    def check_history(self, label: str, other: CallResult, how: str, history: CallResult,
                      ev: Evaluation, log: HygieneLog) -> GateResult | None:
        """Two calls that saw different allocator histories (`how`: the other call's).
        Bit differences that keep both within the oracle's bound are rounding (an order that
        varies run to run: ORD-02); a difference that takes either call outside it came from
        memory the candidate read before writing."""
        for i, (a, b) in enumerate(zip(other.outputs, history.outputs)):
            differs = bitwise_differs(a, b).reshape(a.shape)
            if not bool(differs.any()):
                continue
            if not (tolerance.inexact(a) and tolerance.inexact(b)):
                garbage = differs
            else:
                bound = ev.bounds()[i]
                oracle = ev.oracle.values[i]
                period = ev.periods.get(i)
                out_a = tolerance.compare(a, oracle, bound, i, mask=differs, period=period)
                out_b = tolerance.compare(b, oracle, bound, i, mask=differs, period=period)
                if out_a.ok and out_b.ok:
                    log.rounding_only.append(f"{label}, output {i}: {int(differs.sum())} "
                                               f"element(s)")
                    continue
                garbage = differs
            flat = int(garbage.reshape(-1).nonzero()[0])
            return self.result(
                Status.FAIL, f"{label}, output {i}: {int(garbage.sum())} of {a.numel()} elements "
                f"depend on allocator history (first at index {_where(flat, a.shape)}: "
                f"{b.reshape(-1)[flat].item():.6g} right after the reference's freed output, "
                f"{a.reshape(-1)[flat].item():.6g} {how}; reference "
                f"{ev.reference[i].reshape(-1)[flat].item():.6g})", "allocator_history")
        return None

    @staticmethod
    def cpu_caveat(ctx: GateContext) -> str:
        if ctx.device != "cpu":
            return ""
        try:
            source = ctx.candidate.candidate.read_text(errors="replace")
        except OSError:
            return ""
        if not any(m in source for m in COMPILED_MARKERS):
            return ""
        return ("on the CPU, buffers a compiled extension allocates in C++ are not poisoned; "
                "they were judged through allocator history only")
