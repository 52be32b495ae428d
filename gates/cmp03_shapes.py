"""CMP-03 shape polymorphism: held-out shapes from the problem's shape class.

KernelBench problems keep their sizes in module-level constants that get_inputs() and
get_init_inputs() read; the gate changes one constant at a time (constants of equal value
together: sizes.tied_groups; values the module derives from them follow:
ProblemModule.set_sizes) and all of them together,
draws the benchmark's inputs again at the new sizes, and judges the candidate against the
oracle there: size 1, each dimension scaled down and up, odd and prime sizes, sizes that are
not multiples of any power-of-two block (17, 127, 1000), one smaller and one larger size
chosen per verdict (`fresh_size`), every dimension odd at once at sizes chosen per verdict
(`odd_size`), and the same values in a non-contiguous (transposed) layout. A size at which
the reference itself raises, or returns an output with no elements that has some at the
benchmark's sizes, is outside the class and is not judged.
A problem's variants (ProblemModule.variants: the other configurations its
benchmark judges, such as the other calls of a TritonBench test) are judged at their own
sizes too: a kernel right on the one configuration replayed and wrong on another its
benchmark tests is specialised to that configuration.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Iterator

import torch

from kdiff.data.model import GateResult, Profile, Status
from kdiff.gates.base import (
    SHARED_BENCHMARK_SEED,
    ThresholdedGate,
    Trial,
    TrialLog,
    chosen_for_verdict,
)
from kdiff.gates.triton_calls import interpreter_may_have_run, runs_triton
from kdiff.judging.context import (
    GateContext,
    GateOptions,
    OutputStructureError,
    ReferenceFailure,
)
from kdiff.numerics import inputs as gen
from kdiff.numerics import sizes
from kdiff.sandbox.process import CandidateFailure, CandidateTimeout

# The largest input a held-out size may have. On the CPU 2^16 elements (256 KiB in fp32): the
# candidate runs there, Triton kernels through the interpreter, and a gate must finish in
# seconds; 2^16 is four times the largest input of the shipped corpus, so each dimension can
# still be scaled up. On a GPU four times the largest input the run judges at (--max-elements,
# else 2^22): room for the 2v+1 scale-up of one dimension of it; at the 2^24 default the float64
# oracle's copy of one input is 128 MiB. (On CUDA a CPU-sized cap would leave larger problems
# judged at a handful of sizes, their benchmark shape not among them.)
CPU_MAX_ELEMENTS = 1 << 16
DEVICE_JUDGED_ELEMENTS = 1 << 22
# On the CPU the first size above the benchmark's may reach this many times the cap: a kernel
# whose grid covers exactly the CPU's judged sizes (its programs capped at 2^16 elements'
# worth) is wrong at the next size up, and no smaller size shows it. One trial a problem (each
# costs up to four benchmark calls through the interpreter), at most 2^18 elements an input
# (the 2v+1 scale-up of an input at the cap).
CPU_SCALE_UP_FACTOR = 4


def max_trial_elements(options: GateOptions) -> int:
    if options.device == "cpu":
        return CPU_MAX_ELEMENTS
    return 4 * (options.max_elements or DEVICE_JUDGED_ELEMENTS)


# Sizes that are not multiples of any power-of-two block (16, 32, ..., 1024): a kernel whose
# grid or mask assumes a multiple of its block leaves a tail uncomputed or reads past the end.
OFF_BLOCK_SIZES = (17, 127, 1000)

# get_inputs() seed for every held-out shape: at the benchmark's shape the draw is CMP-01's
# first benchmark-distribution trial (trial sharing: one call serves both). Inputs laid out
# otherwise (transposed, at an offset) are drawn at seeds chosen for the verdict instead: no
# other gate hands over such a layout, so a kernel that makes CMP-03's draws beforehand could
# ignore strides and offsets on any other (tests/hostile/knows_the_judges_layouts.py).
INPUT_SEED = SHARED_BENCHMARK_SEED


def inputs_over(ctx: GateContext, cap: int) -> bool:
    """Whether an input at the current sizes would have more than `cap` elements, from a draw
    on the meta device (shapes only, nothing allocated). One constant can size several
    dimensions of one input (TritonBench's DIM_3 in a [2, 3, 3, 3] weight: at 1000, 2e9
    elements, 8 GB, which drawn in the judge before the check would bring the OOM killer).
    False where get_inputs() cannot run on the meta device: the draw itself is checked then."""
    try:
        with torch.device("meta"):
            inputs = ctx.benchmark_inputs(INPUT_SEED)
    except Exception:  # noqa: BLE001 - a get_inputs() that reads values (.tolist(), .item())
        return False
    return any_over(inputs, cap)


def any_over(inputs: list, cap: int) -> bool:
    """Whether a tensor among `inputs` has more than `cap` elements."""
    return any(isinstance(x, torch.Tensor) and x.numel() > cap for x in inputs)


def next_prime(n: int) -> int:
    k = n + 1
    while k < 2 or any(k % d == 0 for d in range(2, math.isqrt(k) + 1)):
        k += 1
    return k


# --profile quick: the benchmark shape (contiguous and not), the benchmark's own other
# configurations (variants: a TritonBench gold test's other calls, GPU MODE's other tests; a
# few calls, at the benchmark's sizes) and, per free dimension, the first QUICK_SIZES
# held-out sizes: 1 and the odd size near half the benchmark's, both smaller than it (cheap),
# the second off every power-of-two block. The other classes (primes, scale-up, all sizes
# odd together) are the full profile's.
QUICK_SIZES = 2


def held_out_sizes(v: int) -> list[int]:
    """Sizes for one free dimension of benchmark size `v`, in the order they are tried."""
    sizes = [1, max(1, v // 2) | 1, next_prime(v), 2 * v + 1, *OFF_BLOCK_SIZES]
    return [s for s in dict.fromkeys(sizes) if s != v]


def fresh_size(v: int, seed: int, above: bool = False) -> int | None:
    """A size below the benchmark's `v` (`above`: from v + 1 to 2v), none of
    `held_out_sizes(v)`, drawn at `seed`, one chosen for this verdict (Seed.of; None where no
    such size is left). Every held-out size is a function of kdiff's code and the problem's
    sizes, which a candidate can list beforehand and be right at alone, below the benchmark's
    (tests/hostile/knows_the_judges_sizes.py) or above it (knows_the_judges_larger_sizes.py);
    one drawn from a seed nobody knew before it cannot. Above, at most 2v: a call that costs
    no more than the fixed 2v + 1 does."""
    low, high = (v + 1, 2 * v + 1) if above else (2, v)
    taken = {s for s in held_out_sizes(v) if low <= s < high}
    if high - low <= len(taken):
        return None
    rng = random.Random(seed)
    while (size := rng.randrange(low, high)) in taken:
        pass
    return size


def odd_size(v: int, seed: int) -> int:
    """An odd size from v // 4 to below the benchmark's `v` (1 where v is 1), drawn at `seed`,
    one chosen for this verdict (Seed.of): the "all sizes odd" trial changes every dimension
    at once, the only trial that does, and at sizes fixed in kdiff's code a kernel wrong
    wherever two dimensions leave the benchmark's together could be right at those alone
    (tests/hostile/knows_the_judges_joint_sizes.py). Near the benchmark's sizes (above a
    quarter of each) and never above them: a call that costs no more than the benchmark's."""
    odd = range(max(1, v // 4) | 1, v, 2)
    return random.Random(seed).choice(odd) if odd else 1


@dataclass
class ShapeLog(TrialLog):
    """The trial log with what the interpreter allowance needs: the benchmark's largest input,
    whether the candidate runs Triton kernels (None until asked), the held-out trials whose
    timeout it let off (each as the failure it would have been) and the held-out trials
    judged."""

    benchmark_elements: int = 1
    interpreted: bool | None = None
    timed_out: list[GateResult] = field(default_factory=list)
    held_out_judged: int = 0
    # per output, whether the reference's has elements at the benchmark's sizes (None until
    # the benchmark shape is evaluated)
    filled: list[bool] | None = None


@dataclass
class ShapeTrial(Trial):
    constants: dict[str, int] = field(default_factory=dict)
    noncontiguous: bool = False
    offset: bool = False  # each input a contiguous view starting inside a larger storage
    draw_seed: int = INPUT_SEED  # get_inputs()'s
    signature: str = "shape_specialised"
    # What the trial varies (the benchmark shape, one constant, all of them, a layout, a
    # variant): the gate reports one failure per class and goes on to the other classes.
    kind: str = ""

    @property
    def held_out(self) -> bool:
        """Sizes other than the benchmark's (a variant's are the benchmark's own too)."""
        return bool(self.constants) and self.signature != "variant_specialised"


@dataclass
class ClassFailure:
    kind: str
    result: GateResult
    raised: bool  # the candidate raised (or returned wrong shapes): not excused by randomness


class ShapePolymorphism(ThresholdedGate):
    id = "CMP-03"
    name = "shape polymorphism"
    summary = ("held-out sizes: 1, scaled down/up, primes, non-multiples of a block "
               "(17, 127, 1000), one below and one above chosen per verdict; non-contiguous "
               "inputs, inputs at a storage offset")
    signature = "shape_specialised"

    def trials(self, ctx: GateContext) -> Iterator[ShapeTrial]:
        constants = {k: v for k, v in ctx.problem.size_constants().items() if v > 0}
        quick = ctx.options.profile == Profile.QUICK
        chosen = chosen_for_verdict(ctx)
        yield ShapeTrial("benchmark shape", [], signature="exceeds_bound",
                         kind="benchmark shape")
        for kind, signature, layout in (
                ("non-contiguous inputs", "noncontiguous_unsupported", {"noncontiguous": True}),
                ("inputs at a storage offset", "offset_unsupported", {"offset": True})):
            yield ShapeTrial(f"benchmark shape, {kind}, {chosen}", [], signature=signature,
                             kind=kind, draw_seed=chosen.of(f"{self.id} {kind}"), **layout)
        for label, setting in ctx.problem.variants().items():
            yield ShapeTrial(label, [], constants=setting, signature="variant_specialised",
                             kind=label)
        for group in sizes.tied_groups(constants):
            name, v = "=".join(group), constants[group[0]]
            for size in held_out_sizes(v)[:QUICK_SIZES if quick else None]:
                yield ShapeTrial(f"{name}={size} (benchmark {v})", [],
                                 constants={n: size for n in group}, kind=name)
            if quick:
                continue
            for size in (fresh_size(v, chosen.of(f"{self.id} {name}")),
                         fresh_size(v, chosen.of(f"{self.id} {name} above"), above=True)):
                if size is not None:
                    yield ShapeTrial(f"{name}={size} (benchmark {v}, {chosen})", [],
                                     constants={n: size for n in group}, kind=name)
        if quick:
            return
        if len(constants) > 1:
            odd = {name: odd_size(v, chosen.of(f"{self.id} all sizes odd {name}"))
                   for name, v in constants.items()}
            shown = ", ".join(f"{k}={s}" for k, s in odd.items())
            yield ShapeTrial(f"{shown} ({chosen})", [], constants=odd, kind="all sizes odd")
            kind = "all sizes odd, non-contiguous inputs"
            yield ShapeTrial(f"{shown}, non-contiguous inputs, {chosen}", [], constants=odd,
                             noncontiguous=True, signature="noncontiguous_unsupported",
                             kind=kind, draw_seed=chosen.of(f"{self.id} {kind}"))

    def judge(self, ctx: GateContext) -> GateResult:
        too_large: list[str] = []
        base_numel = max((x.numel() for x in ctx.benchmark_inputs(INPUT_SEED)
                          if isinstance(x, torch.Tensor)), default=1)
        log = ShapeLog(benchmark_elements=base_numel)
        originals = ctx.problem.size_constants()
        cap = max_trial_elements(ctx.options)
        scaled_up = False  # a size above the cap judged (CPU_SCALE_UP_FACTOR)
        failures: list[ClassFailure] = []
        try:
            with self.reporting_interrupts(log):
                for trial in self.trials(ctx):
                    if any(f.kind == trial.kind for f in failures):
                        continue  # one failure per class is reported
                    # Sizes scale the inputs at most linearly per dimension: skip before drawing.
                    growth = math.prod(s / originals[k] for k, s in trial.constants.items()
                                       if k in originals)
                    room = cap
                    if ctx.device == "cpu" and growth > 1 and not scaled_up:
                        room = CPU_SCALE_UP_FACTOR * cap
                    if base_numel * growth > room:
                        too_large.append(trial.label)
                        continue
                    ctx.set_constants(trial.constants)
                    if not self.prepare(ctx, trial, log, too_large, room):
                        continue
                    scaled_up |= base_numel * growth > cap
                    judged = log.judged
                    try:
                        failure = self.judge_shape(ctx, trial, log)
                    except CandidateFailure as exc:
                        failures.append(ClassFailure(trial.kind, self.result(
                            Status.FAIL, exc.detail, exc.signature), raised=True))
                        if isinstance(exc, CandidateTimeout):
                            break  # each further call could wait as long
                        continue
                    if failure is None:
                        ran = log.judged > judged
                        log.held_out_judged += ran and bool(trial.constants)
                        if ran and log.interpreted is None and ctx.device == "cpu":
                            log.interpreted = runs_triton(ctx)  # asked of this worker
                        continue
                    failures.append(ClassFailure(trial.kind, failure, raised=False))
        finally:
            ctx.set_constants({})
        if failures:
            return self.report(ctx, failures)
        if log.timed_out and not log.held_out_judged:
            # The allowance covers some held-out sizes, never all of them.
            return log.timed_out[0]
        result = self.summarize(log)
        if too_large:
            result.detail += (f"; {len(too_large)} size(s) over {cap} elements per input "
                              f"not run ({', '.join(too_large)})")
        return result

    def report(self, ctx: GateContext, failures: list[ClassFailure]) -> GateResult:
        """Every failing class, the first in full. A raise fails whatever the reference is;
        failures of values only are excused by a random reference (Gate.run)."""
        raised = [f for f in failures if f.raised]
        if not raised and ctx.random_reference():
            return failures[0].result
        first = (raised or failures)[0]
        others = [f for f in failures if f is not first]
        detail = first.result.detail
        if others:
            detail += f"; {len(failures)} trial classes fail, also: " + "; ".join(
                f"[{f.kind}] {f.result.signature}: {f.result.detail[:200]}" for f in others)
        if raised:
            failure = CandidateFailure(detail)
            failure.signature = first.result.signature
            raise failure
        return self.result(Status.FAIL, detail, first.result.signature,
                           first.result.worst_ratio)

    def prepare(self, ctx: GateContext, trial: ShapeTrial, log: TrialLog,
                too_large: list[str], cap: int) -> bool:
        """Draw the trial's inputs at its sizes; False (noted) when there is nothing to judge."""
        if inputs_over(ctx, cap):
            too_large.append(trial.label)
            return False
        try:
            inputs = ctx.benchmark_inputs(trial.draw_seed)
        except Exception as exc:  # noqa: BLE001 - get_inputs() itself refuses these sizes
            log.skipped.append(f"{trial.label}: get_inputs() raised {type(exc).__name__}")
            return False
        if any_over(inputs, cap):
            too_large.append(trial.label)
            return False
        if trial.offset:
            inputs = [gen.at_offset(x) for x in inputs]
        if trial.noncontiguous:
            inputs = [gen.noncontiguous(x) for x in inputs]
            if all(not isinstance(x, torch.Tensor) or x.is_contiguous() for x in inputs):
                log.skipped.append(f"{trial.label}: no input of two or more dimensions")
                return False
        trial.inputs = inputs
        shapes = [tuple(x.shape) for x in inputs if isinstance(x, torch.Tensor)]
        trial.label += f": inputs {', '.join(map(str, shapes))}"
        return True

    @staticmethod
    def interpreter_too_slow(ctx: GateContext, trial: ShapeTrial, log: ShapeLog,
                             exc: CandidateFailure) -> bool:
        """Through Triton's interpreter a held-out size many times the benchmark's can take
        longer than one call may, which says nothing about the values CMP-03 judges. Allowed
        only there: on the CPU, for a candidate that runs Triton kernels (ShapeLog.
        interpreted), at a size whose inputs are larger than the benchmark's (a kernel that
        answered at the benchmark's size and not at a smaller one hangs). A hang at the
        benchmark's own sizes still fails (there and in RES-02), as does any on a GPU, and one
        whose worker stalled through the call (interpreter_may_have_run)."""
        largest = max((x.numel() for x in trial.inputs if isinstance(x, torch.Tensor)),
                      default=0)
        return (bool(trial.constants) and bool(log.interpreted)
                and largest > log.benchmark_elements and interpreter_may_have_run(ctx, exc))

    def outside_class(self, ctx: GateContext, trial: ShapeTrial, log: ShapeLog) -> bool:
        """Whether the reference leaves a held-out size outside the problem's class, noted as
        not judged: it raises there, or an output of its has no elements where it has some at
        the benchmark's sizes (interleaved RoPE at head_dim 1: `x[..., 1::2]` is empty), which
        no candidate can be held to. At the benchmark shape it notes which outputs have
        elements. The evaluation is the one judge_trial reuses."""
        if not (trial.held_out or trial.kind == "benchmark shape"):
            return False
        try:
            reference = self.evaluate_trial(ctx, trial).reference
        except ReferenceFailure as exc:
            log.skipped.append(f"{trial.label}: {exc}")
            return True
        if not trial.held_out:
            log.filled = [r.numel() > 0 for r in reference]
            return False
        empty = [i for i, (r, filled) in enumerate(zip(reference, log.filled or []))
                 if filled and r.numel() == 0]
        if empty:
            log.skipped.append(f"{trial.label}: the reference's output {empty[0]} has no "
                               f"elements here (shape {tuple(reference[empty[0]].shape)})")
        return bool(empty)

    def judge_shape(self, ctx: GateContext, trial: ShapeTrial, log: ShapeLog
                    ) -> GateResult | None:
        """One trial through the bound; a failure of values carries the trial's signature.
        A candidate that raises, or returns the wrong shape, fails the gate at once (the
        exception, raised on, names the trial): with the trial's signature on a
        non-contiguous layout or for a wrong shape, else the exception's own."""
        if self.outside_class(ctx, trial, log):
            return None
        try:
            failure = self.judge_trial(ctx, trial, log)
        except CandidateFailure as exc:
            if self.interpreter_too_slow(ctx, trial, log, exc):
                log.skipped.append(f"{trial.label}: the call ran past the call timeout "
                                   f"through the Triton interpreter ({exc.detail})")
                log.timed_out.append(self.result(
                    Status.FAIL, f"{trial.label}: {exc.signature}: {exc.detail}; no held-out "
                    "size was judged", exc.signature))
                return None
            if trial.noncontiguous or trial.offset or isinstance(exc, OutputStructureError):
                exc.detail, exc.signature = f"{trial.label}: {exc.detail}", trial.signature
            else:
                exc.detail = f"{trial.label}: {exc.signature}: {exc.detail}"
            raise
        if failure is not None:
            failure.signature = trial.signature
        return failure
