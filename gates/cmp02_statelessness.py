"""CMP-02 input sensitivity and statelessness: one model instance answers a long sequence of
calls (more than a benchmark's correctness trials and timer warm-up make together), each judged
against the oracle: different inputs interleaved (A, B, A', ...), the same data in new tensors,
one set of input tensors kept in the worker (first holding draws chosen for the verdict) and
overwritten in place between calls (through their memory, as another kernel writes: on the CPU
by the judge in its arena, and never moving their version counters), all from a neutral call
stack; then instances built with other seeds (freshly initialised parameters, every trainable
one then redrawn as another trained model's: kdiff.data.trained, so that a parameter built
as ones or zeros at every seed is read too, where the candidate's tensors are the
reference's one for one; otherwise as built, which the detail says): fixed ones, and one
chosen for the verdict.

When a call fails, the gate works out which pattern broke it:
- `stateful_cache`: the answer is the oracle of an earlier call's inputs (cached by pointer,
  shape, version counter or seed);
- `state_carried`: a freshly built instance answers the failed call's inputs correctly, so
  the answer depends on the calls made before (statistics kept after a warm-up, counters);
- `stack_sniffing`: the same inputs, called from a frame named as the benchmark's correctness
  loop, are answered correctly;
- `grad_mode_specialised`: wrong only with autograd on (a training loop's forward), where the
  benchmark calls with it off;
- `seed_specialised`: only an instance built with another seed is wrong;
- `input_specialised`: otherwise (an answer that holds only for the benchmark's inputs).
A call on the kept tensors that leaves them changed (where the reference leaves its own
unchanged) fails `input_mutated`: a kernel that writes into its inputs only once it sees the
same tensors again escapes RES-01, whose every call has new ones.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

import torch

from kdiff.data.model import GateResult, Status
from kdiff.gates.base import (
    Seed,
    ThresholdedGate,
    Trial,
    TrialLog,
    benchmark_draw,
    chosen_for_verdict,
    normal_draw,
)
from kdiff.judging.context import (
    BENCHMARK_SEED,
    CallResult,
    Evaluation,
    GateContext,
    OutputStructureError,
    ReferenceFailure,
    check_structure,
)
from kdiff.numerics import inputs as gen
from kdiff.numerics import tolerance
from kdiff.numerics.tolerance import bitwise_equal
from kdiff.sandbox.process import CandidateFailure

# KernelBench's correctness check makes 5 calls and its timer 3 warm-up calls before it
# measures; 16 calls on one instance, twice that, outlast any state that only kicks in after
# the benchmark has looked.
MIN_CALLS = 16

# Seeds of the extra instances: freshly initialised parameters, unlike the benchmark's 42.
# Then one instance at a seed chosen for the verdict: a kernel can build the reference at every
# seed fixed here beforehand and carry those parameters in place of its instance's own
# (tests/hostile/knows_the_judges_instances.py); an instance built at a seed nobody knew
# before has parameters no table holds.
FRESH_SEEDS = (7, 1234)

STORED = "cmp02"  # the name of the input set the worker keeps across calls

# How the inputs of a call relate to earlier calls.
FRESH, REPEAT, STORE, OVERWRITE, STORED_AGAIN, FRESH_PARAMETERS, AUTOGRAD = (
    "fresh", "repeat", "store", "overwrite", "stored_again", "fresh_parameters", "autograd")


@dataclass
class Call(Trial):
    """One call of the sequence, and the candidate's answer once it was made."""

    pattern: str = FRESH
    data: str = ""  # the name of the data set: calls with the same name share their oracle
    outputs: list[torch.Tensor] | None = None
    inputs_after: list[Any] | None = None  # what kept tensors hold after the call


def _broadcast(x: Any) -> bool:
    """A tensor whose elements share memory (an `expand`: a stride of 0 over a dim of 2+)."""
    return isinstance(x, torch.Tensor) and any(
        stride == 0 and size > 1 for stride, size in zip(x.stride(), x.shape))


def _clone(inputs: list[Any]) -> list[Any]:
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]


def _same(a: list[Any], b: list[Any]) -> bool:
    """The same data, bit for bit, in each input's own dtype (fp8 has no value comparison on
    the CPU; a tensor of another dtype is other data), compared on the CPU: what the worker
    kept comes back on the candidate's device while the judge draws inputs on its own."""
    return len(a) == len(b) and all(
        bitwise_equal(x.cpu(), y.cpu()) if isinstance(x, torch.Tensor)
        and isinstance(y, torch.Tensor) else x == y for x, y in zip(a, b))


def within_bound(outputs: list[torch.Tensor], ev: Evaluation,
                 model: tolerance.BoundModel) -> bool:
    try:
        check_structure(outputs, ev.reference)
    except OutputStructureError:
        return False
    return all(m.ok for m in ev.mismatches(outputs, model))


def _as_built(ctx: GateContext, seeds: list[int]) -> str:
    """A clause saying which instances at `seeds` kept their parameters as built, and why
    (the trained-parameter check did not apply to them), or "" where all were redrawn."""
    kept: dict[str, list[int]] = {}
    for seed in seeds:
        why = ctx.kept_as_built(seed)
        if why is not None:
            kept.setdefault(why, []).append(seed)
    return "".join(f"; {'instances' if len(at) > 1 else 'the instance'} built at seed "
                   f"{', '.join(map(str, at))} kept the parameters as built, not redrawn as a "
                   f"trained model's: {why}" for why, at in kept.items())


class Statelessness(ThresholdedGate):
    id = "CMP-02"
    name = "input sensitivity and statelessness"
    summary = (f">= {MIN_CALLS} calls on one instance: interleaved inputs, new tensors, inputs "
               "overwritten in place, neutral call stack; fresh parameters, one set chosen per "
               "verdict")
    signature = "input_specialised"
    shares_calls = False  # a sequence on one instance: every call must reach it

    def trials(self, ctx: GateContext) -> Iterator[Call]:
        bench = ctx.benchmark_inputs
        chosen = chosen_for_verdict(ctx)
        # A, B, the normal and the uniform draw are CMP-01's: their oracle is shared. D and E,
        # which the kept tensors first hold, are chosen for the verdict: the kept tensors are
        # the only ones handed to the candidate again, and a kernel that knows every value
        # they could hold could write into them on any other
        # (tests/hostile/knows_the_judges_kept_draws.py). F, the one call with autograd on
        # (no other gate makes one), is chosen and new to the sequence alike: a kernel wrong
        # with autograd on could be right on a draw it knows, or on values it answered
        # before with autograd off (knows_the_judges_autograd_draw.py).
        a, b = benchmark_draw(ctx, 0), benchmark_draw(ctx, 1)
        c = bench(2003)
        d, e, f = (bench(chosen.of(f"{self.id} {name}")) for name in ("D", "E", "F"))
        kept = f"at {chosen}"
        normal = normal_draw(ctx, 0)
        uniform = ctx.draw(gen.uniform(-1.0, 1.0), 0)
        sequence = [
            Call("A (benchmark distribution)", a, data="A"),
            Call("B (new values, same shape)", b, data="B"),
            Call("A again in new tensors", _clone(a), pattern=REPEAT, data="A"),
            Call("C", c, data="C"),
            Call("B again in new tensors", _clone(b), pattern=REPEAT, data="B"),
            Call("normal draw", normal, data="normal"),
            Call("A again in new tensors", _clone(a), pattern=REPEAT, data="A"),
            Call(f"D {kept} in tensors the worker keeps", d, pattern=STORE, data="D",
                 call_options={"store_inputs_as": STORED}),
            Call(f"kept tensors overwritten in place with E {kept}", e, pattern=OVERWRITE, data="E",
                 call_options={"use_stored_inputs": STORED}),
            Call("kept tensors again, unchanged", [], pattern=STORED_AGAIN,
                 call_options={"use_stored_inputs": STORED}),
            Call("uniform(-1,1) draw", uniform, data="uniform"),
            Call("kept tensors overwritten in place with C", _clone(c), pattern=OVERWRITE,
                 data="C", call_options={"use_stored_inputs": STORED}),
            Call("B again in new tensors", _clone(b), pattern=REPEAT, data="B"),
            Call("kept tensors overwritten in place with the normal draw", _clone(normal),
                 pattern=OVERWRITE, data="normal", call_options={"use_stored_inputs": STORED}),
            Call(f"D {kept} again in new tensors", _clone(d), pattern=REPEAT, data="D"),
            Call("normal draw again in new tensors", _clone(normal), pattern=REPEAT,
                 data="normal"),
            Call("A again in new tensors", _clone(a), pattern=REPEAT, data="A"),
            Call(f"E {kept} again in new tensors", _clone(e), pattern=REPEAT, data="E"),
            Call(f"F {kept}, autograd on", f, pattern=AUTOGRAD, data="F",
                 call_options={"grad": True}),
        ]
        assert len(sequence) >= MIN_CALLS
        for i, call in enumerate(sequence):
            call.label = f"call {i + 1}/{len(sequence)}: {call.label}"
            yield call
        for seed in FRESH_SEEDS:
            yield Call(f"instance built with seed {seed}: benchmark inputs", bench(2010 + seed),
                       seed=seed, pattern=FRESH_PARAMETERS, data=f"bench{seed}")
            yield Call(f"instance built with seed {seed}: normal draw",
                       ctx.draw(gen.normal(), 2020 + seed), seed=seed, pattern=FRESH_PARAMETERS,
                       data=f"normal{seed}")
        yield self.chosen_instance(ctx, chosen)

    def chosen_instance(self, ctx: GateContext, chosen: Seed) -> Call:
        """One call on an instance built at a seed of its own from the verdict's chosen seed
        (`chosen`, which the label names), on the benchmark's inputs drawn at another: one
        call and one oracle evaluation, neither of which a cache holds (their keys name the
        seeds)."""
        return Call(f"instance built at {chosen}: benchmark inputs",
                    ctx.benchmark_inputs(chosen.of(f"{self.id} instance inputs")),
                    seed=chosen.of(f"{self.id} instance"), pattern=FRESH_PARAMETERS,
                    data="chosen instance")

    def judge(self, ctx: GateContext) -> GateResult:
        log = TrialLog()
        made: list[Call] = []
        fresh_seeds: list[int] = []  # of the instances built at other seeds, in order
        stored: Call | None = None  # the last call on the worker's kept tensors
        broadcast_kept = False  # whether those are broadcast views
        self._evaluations: dict[tuple[str, int], Evaluation] = {}
        try:
            with self.reporting_interrupts(log):
                for call in self.trials(ctx):
                    if call.pattern in (OVERWRITE, STORED_AGAIN) and stored is None:
                        log.skipped.append(f"{call.label}: no kept tensors")
                        continue
                    if call.pattern == OVERWRITE and broadcast_kept:
                        log.skipped.append(f"{call.label}: the kept tensors are broadcast views "
                                           f"(stride 0), which no caller can overwrite in place")
                        continue
                    if call.pattern == STORED_AGAIN:
                        call.inputs = _clone(stored.inputs_after)
                        # Unchanged unless a call wrote into its inputs (RES-01 judges that).
                        call.data = stored.data if _same(stored.inputs, call.inputs) else ""
                    if call.pattern == FRESH_PARAMETERS and call.seed not in fresh_seeds:
                        fresh_seeds.append(call.seed)
                    failure = self.judge_trial(ctx, call, log) or self.kept_unchanged(ctx, call)
                    if failure is not None and failure.signature == "input_mutated":
                        return failure
                    if failure is not None:
                        signature, why = self.diagnose(ctx, call, made)
                        failure.signature = signature
                        failure.detail = f"{failure.detail}; {why}{_as_built(ctx, fresh_seeds)}"
                        return failure
                    if call.outputs is None:
                        continue  # outside the reference's domain, or under-specified
                    made.append(call)
                    if call.pattern in (STORE, OVERWRITE, STORED_AGAIN):
                        stored = call
                    if call.pattern == STORE:
                        broadcast_kept = any(map(_broadcast, call.inputs))
        finally:
            try:  # release the kept tensors: later gates measure the worker's live memory
                ctx.candidate.request("forget")
            except CandidateFailure:
                pass
        result = self.summarize(log)
        result.detail = f"{len(made)} calls; {result.detail}{_as_built(ctx, fresh_seeds)}"
        return result

    def kept_unchanged(self, ctx: GateContext, call: Call) -> GateResult | None:
        """A call on the kept tensors must leave in them what they held before it (the judge
        reads them from its own memory on the CPU: kdiff.sandbox.arena)."""
        if call.pattern not in (STORE, OVERWRITE, STORED_AGAIN) or call.inputs_after is None:
            return None
        before = gen.cast_inputs(call.inputs, call.dtype)
        written = ctx.input_written(before, before, call.inputs_after)
        if written is None:
            return None
        return self.result(Status.FAIL, f"{call.label}: {written}", "input_mutated")

    def evaluate_trial(self, ctx: GateContext, trial: Trial) -> Evaluation:
        assert isinstance(trial, Call)
        if not trial.data:
            return ctx.evaluate(trial.inputs, trial.seed, trial.dtype)
        key = (trial.data, trial.seed)
        if key not in self._evaluations:
            self._evaluations[key] = ctx.evaluate(trial.inputs, trial.seed, trial.dtype)
        return self._evaluations[key]

    def call_trial(self, ctx: GateContext, trial: Trial) -> CallResult:
        assert isinstance(trial, Call)
        options = dict(trial.call_options)
        if trial.pattern == OVERWRITE:
            ctx.candidate_key(trial.seed, trial.dtype)
            values = [x.cpu() if isinstance(x, torch.Tensor) else None
                      for x in gen.cast_inputs(trial.inputs, trial.dtype)]
            ctx.candidate.overwrite_stored(STORED, values)
        send = [] if "use_stored_inputs" in options else trial.inputs
        if ctx.backward and not send:  # the output gradients follow the kept tensors' values
            options["cotangents"] = ctx.cotangents(
                ctx.run_reference(trial.inputs, trial.seed, trial.dtype))
        got = ctx.call(send, trial.seed, trial.dtype, **options)
        trial.outputs = got.outputs
        if got.inputs_after is not None:
            trial.inputs_after = [after if after is not None else x
                                  for x, after in zip(trial.inputs, got.inputs_after)]
        return got

    def diagnose(self, ctx: GateContext, failed: Call, made: list[Call]) -> tuple[str, str]:
        """Which pattern broke the candidate: (signature, a sentence saying why)."""
        same_instance = [c for c in made if c.seed == failed.seed]
        for prev in reversed(same_instance):
            if within_bound(failed.outputs, self.evaluate_trial(ctx, prev), prev.bound_model):
                return "stateful_cache", f"the answer is that of an earlier {prev.label}"
        if failed.pattern == AUTOGRAD and self._answers(ctx, failed, stack="neutral"):
            return "grad_mode_specialised", ("the same inputs with autograd off, as the "
                                             "benchmark calls, are answered correctly")
        # The instance has answered earlier calls (the native check's, other gates', this
        # gate's): a fresh one that gets these inputs right shows the history broke it.
        if self._answers(ctx, failed, stack="neutral", instance="fresh"):
            return "state_carried", ("a freshly built instance answers these inputs correctly: "
                                     "the answer depends on the calls made before")
        if self._answers(ctx, failed, stack="benchmark"):
            return "stack_sniffing", ("the same inputs called from a frame named "
                                      "run_and_check_correctness are answered correctly")
        if failed.pattern == FRESH_PARAMETERS:
            return "seed_specialised", (f"the instance built with the benchmark's seed "
                                        f"{BENCHMARK_SEED} was answered correctly")
        return "input_specialised", "the answer is wrong for these inputs"

    def _answers(self, ctx: GateContext, call: Call, stack: str, instance: str = "") -> bool:
        """Whether the instance (or a fresh one, named `instance`) answers `call`'s inputs, in
        new tensors, within the bound."""
        try:
            ev = self.evaluate_trial(ctx, call)
            got = ctx.call(_clone(call.inputs), call.seed, call.dtype, instance=instance,
                           stack=stack)
        except (CandidateFailure, ReferenceFailure):
            return False
        return within_bound(got.outputs, ev, call.bound_model)
