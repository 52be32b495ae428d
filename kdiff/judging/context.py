"""The context a gate or a native check judges in.

The context gives a gate (and an adapter's native check) the problem (loaded in the judge),
the candidate (a handle on its worker process), the float64 oracle and the tolerance model;
the gate chooses inputs and decides.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import math
import os
import random
import secrets
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping

import torch

from kdiff.data.cache import private_root
from kdiff.data.differentiated import (
    DECLARATION,
    ForwardParameters,
    declares_backward,
    differentiated_inputs,
)
from kdiff.data.digest import DigestMemo, digest
from kdiff.data.model import Profile
from kdiff.data.problem import LoadError, ProblemModule
from kdiff.data.recast import recast_module
from kdiff.data.seeding import random_state, set_random_state
from kdiff.data.trained import Held, held, redraw_trainable, unpaired
from kdiff.data.vjp import differentiable, input_gradients
from kdiff.judging.oracle_cache import OracleCache
from kdiff.numerics import inputs as gen
from kdiff.numerics import sizes, tolerance
from kdiff.numerics.oracle import OracleResult, TrustedStaleEntry, run_oracle
from kdiff.numerics.tolerance import BoundModel
from kdiff.sandbox.process import (
    JUDGE_READ_INPUTS,
    CandidateFailure,
    CandidateOverBudget,
    CandidateProcess,
    CandidateRaised,
    CandidateTimeout,
)
from kdiff.sandbox.protocol import CallReply, MalformedReply, shared_storage
from kdiff.sandbox.replies import UnusableOutput

# A working dtype of None is the problem's own precision: inputs and parameters as
# get_inputs() and Model(...) make them, cast to nothing. A dtype names a recast of the whole
# problem (PRC-01's fp16 and bf16 runs of an fp32 problem; float64 for a probe).
NATIVE = None
DTYPE_NAMES = {
    NATIVE: "native",
    torch.float32: "float32",
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
    torch.float64: "float64",
    torch.float8_e4m3fn: "float8_e4m3fn",
    torch.float8_e5m2: "float8_e5m2",
}
DTYPES = {v: k for k, v in DTYPE_NAMES.items()}

BENCHMARK_SEED = 42  # KernelBench builds both models after torch.manual_seed(42)
# get_inputs() seed of the reference's self-consistency check (any seed the gates do not use).
RANDOMNESS_SEED = 4711
# Failures about storage, not values: a random reference does not explain them.
STORAGE_SIGNATURES = frozenset({"output_aliasing", "input_mutated"})


# Call options that leave a call a function of its inputs alone (the output gradients follow
# from the inputs): such a call may serve every gate that makes it. Any other option (churn,
# poison, kept inputs, the reference run first, a call stack, an instance) makes a call that
# is always sent.
SHAREABLE_OPTIONS = frozenset({"cotangents", "differentiated"})
# Call options of the calls whose inputs their gate reads back and judges itself, naming the
# trial (RES-01's: the reference run first, poison; CMP-02's on the tensors the worker keeps).
# Every other call's inputs are compared in GateContext.call (`call_fault`): a candidate
# sees these options in its worker, and wrote into every input but theirs
# (tests/hostile/writes_inputs_no_gate_reads.py).
INPUTS_JUDGED_BY_GATE = frozenset(
    {"reference_first", "poison", "store_inputs_as", "use_stored_inputs"}
)


# Hang detection, not performance: correct generated kernels run up to 10-100x slower than the
# library reference in published speedup tables; a call three orders of magnitude slower than
# the reference is one that is not making progress (a spin loop, a grid launching far more
# programs than the problem has elements). The floor covers references so short (tens of
# microseconds) that Python and launch overhead alone are many times their length.
HANG_FACTOR = 1000.0
HANG_FLOOR_S = 1.0

# Errors of a device or host short of memory: with other judges' workers on the same GPU (or
# host) an honest call can meet them, so such a call is judged again alone before it counts.
MEMORY_EXHAUSTED = (
    "out of memory",
    "_STATUS_ALLOC_FAILED",
    "cudaErrorMemoryAllocation",
    "MemoryError",
)


class MachineTooBusy(Exception):
    """The reference itself ran past the call timeout: a timeout here says nothing about
    the candidate (kdiff's error: the kernel is undecided, never rejected)."""


class _CallLock:
    """Every candidate call of every kdiff judge that shares this cache (kdiff.data.cache: the
    user's, on one machine) holds this lock shared; a call judged again after a timeout holds
    it alone, so that no other judge's call runs beside it. It lives in the cache, which
    outlives runs, not in a run's temporary folder, which must not; in its private folder,
    which no worker can open (a worker holding it would stop every judge).

    The time a case waits for it is another case's: a call judged again alone (after a
    timeout, or an error that names memory) holds it up to its deadline, as often as its
    candidate asks, for as long as that candidate's own wall budget lasts
    (tests/hostile/holds_the_call_lock.py); charged to the cases waiting, it spends theirs
    (`case_timeout` for an honest kernel). The wait is left out of the waiting case's budget
    (`CandidateProcess.not_charged`)."""

    @contextlib.contextmanager
    def held(self, exclusive: bool, waiting: CandidateProcess) -> Iterator[None]:
        fd = os.open(private_root() / "calls.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            asked = time.monotonic()
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            waiting.not_charged(time.monotonic() - asked)
            yield
        finally:
            os.close(fd)  # releases the lock


CALL_LOCK = _CallLock()


def sticky_device_error(error: str) -> bool:
    """Whether an exception of the judge's own work (its reference, its oracle, its
    comparisons), as `error` words it, is a CUDA error that leaves the judge's context unusable
    (torch raises them as AcceleratorError, older versions as RuntimeError 'CUDA error: ...').
    Never asked of a candidate's error: that reaches the judge as a CandidateFailure, a
    verdict, and its worker says itself whether its context broke (probes.context_broken)."""
    return error.startswith("AcceleratorError") or "CUDA error:" in error


class JudgeDeviceBroken(Exception):
    """A CUDA error that leaves the judge's own context unusable (a device-side assert in the
    reference): no later gate of this judge can run, so it is kdiff's error, never a skip of
    one input set; the judge process is to be restarted, as a worker is."""


class ReferenceBrokeDevice(JudgeDeviceBroken):
    """A device-side assert in the reference (or its float64 oracle) on one gate's inputs,
    raised after the judge's device was seen clean: that input set is outside the problem's
    contract, as a ReferenceFailure says on the CPU (an index drawn past the dimension it
    indexes raises IndexError there). The judge's context is lost all the same; another
    judge goes on from the gates decided before it (kdiff.verdicts.judge), refusing `draw`
    (GateContext.draw_key; None where the inputs were on the device and cannot be read)."""

    def __init__(self, message: str, draw: str | None = None) -> None:
        super().__init__(message)
        self.draw = draw


def _names_the_same_everywhere(x: Any) -> bool:
    """Whether kdiff.data.digest names `x` the same in every process: host tensors, plain
    values, and containers of them."""
    if isinstance(x, torch.Tensor):
        return x.device.type == "cpu"
    if isinstance(x, (list, tuple)):
        return all(_names_the_same_everywhere(v) for v in x)
    if isinstance(x, dict):
        return all(
            _names_the_same_everywhere(k) and _names_the_same_everywhere(v) for k, v in x.items()
        )
    return x is None or isinstance(x, (bool, int, float, complex, str, bytes, torch.dtype))


class ReferenceFailure(Exception):
    """The reference itself raised on a gate's inputs: that input set is outside the
    problem's contract and is not used."""


@dataclass
class CallResult:
    outputs: list[torch.Tensor]
    aliases: list[str]
    seconds: float
    inputs_after: list[torch.Tensor | None] | None = None
    written: int = 0  # outputs of earlier calls, still held, changed since handed out
    reused: list[int] = field(default_factory=list)  # outputs in an earlier one's storage


@dataclass(frozen=True)
class NativeAnswer:
    """One call the native check made: what it sent, the model seed and dtype of the
    instance it called, and what the candidate answered."""

    inputs: list[Any]
    seed: int
    dtype: torch.dtype | None
    outputs: list[torch.Tensor]


@dataclass(frozen=True)
class CallFault:
    """What a call did to a caller's tensors, found whatever gate made it: a failure of that
    gate, with this signature and detail, unless the gate fails on its own."""

    signature: str
    detail: str


@dataclass
class EarlierCall:
    """A call of the benchmark's instance at the sizes judged at, with no option, on inputs as
    the judge sent them."""

    inputs: list[Any]
    result: CallResult


@dataclass
class Evaluation:
    """The oracle and the working-precision reference on one input set."""

    oracle: OracleResult
    reference: list[torch.Tensor]
    dtype: torch.dtype  # the arithmetic precision the bound is derived for
    cotangents: list[torch.Tensor] | None = None
    # outputs defined modulo a period, by index (the problem's KDIFF_PERIODIC_OUTPUTS)
    periods: dict[int, float] = field(default_factory=dict)
    # reference_ratio and turn_roundings by bound model: gates that share a draw share its
    # Evaluation
    _reference_ratios: dict[BoundModel, float] = field(
        default_factory=dict, repr=False, compare=False
    )
    _turn_roundings: dict[BoundModel, list[torch.Tensor | None]] = field(
        default_factory=dict, repr=False, compare=False
    )

    def near_ties(self) -> bool:
        """Whether some output holds a pick at a near tie, or a value computed from one,
        which is not judged (kdiff.numerics.integers.DECISIONS: an infinite magnitude where
        the oracle's value is finite)."""
        return any(
            bool((torch.isinf(m) & torch.isfinite(v)).any())
            for v, m in zip(self.oracle.values, self.oracle.magnitudes)
        )

    def stored_coarser(self) -> list[bool]:
        """Per output: the reference stores it in a floating format coarser than the
        arithmetic."""
        u = tolerance.unit_roundoff(self.dtype)
        return [
            r.is_floating_point() and tolerance.unit_roundoff(r.dtype) > u for r in self.reference
        ]

    def quantizations(self) -> list[float]:
        """The oracle's traced quantization per output, and at least the output's own
        rounding where the reference stores it coarser than the arithmetic (an output the
        trace did not see produced, say)."""
        return [
            max(q, tolerance.unit_roundoff(r.dtype) if coarser else 0.0)
            for q, r, coarser in zip(
                self.oracle.quantizations, self.reference, self.stored_coarser()
            )
        ]

    def floors(self) -> list[float]:
        """Per output stored coarser than the arithmetic, its format's underflow term, where
        the trace saw no rounding as coarse behind it (an output it did not see produced):
        the trace carries each one it saw in its magnitudes."""
        return [
            tolerance.underflow(r.dtype)
            if coarser and q < tolerance.unit_roundoff(r.dtype) else 0.0
            for r, coarser, q in zip(self.reference, self.stored_coarser(),
                                     self.oracle.quantizations)
        ]

    def turn_roundings(
        self, model: BoundModel = BoundModel.PROBABILISTIC
    ) -> list[torch.Tensor | None]:
        """Per output defined modulo a period, the rounding of a representative on the other
        side of a turn where its exact value is within `model`'s arithmetic bound of one
        (tolerance.turn_rounding); else None. Once per model."""
        if model not in self._turn_roundings:
            self._turn_roundings[model] = [
                None
                if (period := self.periods.get(i)) is None
                else tolerance.turn_rounding(
                    v,
                    tolerance.bound(m, d, self.dtype, model),
                    period,
                    max(q, tolerance.unit_roundoff(self.dtype)),
                )
                for i, (m, d, v, q) in enumerate(
                    zip(
                        self.oracle.magnitudes,
                        self.oracle.depths,
                        self.oracle.values,
                        self.quantizations(),
                    )
                )
            ]
        return self._turn_roundings[model]

    def bounds(
        self, model: BoundModel = BoundModel.PROBABILISTIC, margin: float = 1.0
    ) -> list[torch.Tensor]:
        bounds = [
            tolerance.bound(m, d, self.dtype, model, q, margin, floor)
            for m, d, q, floor in zip(
                self.oracle.magnitudes, self.oracle.depths, self.quantizations(), self.floors()
            )
        ]
        return [b if t is None else b + t for b, t in zip(bounds, self.turn_roundings(model))]

    def allowances(self, model: BoundModel = BoundModel.PROBABILISTIC) -> list[torch.Tensor | None]:
        """Per output, the deterministic part of `model`'s bound (tolerance.compare), or
        None."""
        allowances = [
            q * m + floor if q else None
            for q, m, floor in zip(self.quantizations(), self.oracle.magnitudes, self.floors())
        ]
        return [
            a if t is None else t if a is None else a + t
            for a, t in zip(allowances, self.turn_roundings(model))
        ]

    def mismatches(
        self,
        outputs: list[torch.Tensor],
        model: BoundModel = BoundModel.PROBABILISTIC,
        margin: float = 1.0,
    ) -> list[tolerance.Mismatch]:
        """`outputs` judged against the oracle, output by output (an index at a near tie
        against the pick it holds where that is admissible: `expected`)."""
        return [
            tolerance.compare(g, self.expected(i, g), b, i, allowance=a, period=self.periods.get(i))
            for i, (g, b, a) in enumerate(
                zip(outputs, self.bounds(model, margin), self.allowances(model))
            )
        ]

    def expected(self, i: int, got: torch.Tensor) -> torch.Tensor:
        """The oracle's value of output `i` to judge `got` against: where `got` holds another
        pick the oracle admits at a near tie (OracleResult.picks), that pick."""
        picks = self.oracle.picks[i] if i < len(self.oracle.picks) else []
        return tolerance.admitted(got, self.oracle.values[i], picks)

    def entry(self) -> dict[str, Any]:
        """What the oracle cache keeps of this evaluation (kdiff.judging.oracle_cache): all
        but the working dtype and periods, which the problem gives, and the reference's
        ratio under the probabilistic model where it is known."""
        return {
            "values": self.oracle.values,
            "magnitudes": self.oracle.magnitudes,
            "depths": self.oracle.depths,
            "peaks": self.oracle.peaks,
            "quantizations": self.oracle.quantizations,
            "alternatives": self.oracle.alternatives,
            "picks": self.oracle.picks,
            "classes_known": self.oracle.classes_known,
            "reference": self.reference,
            "cotangents": self.cotangents,
            "reference_ratio": self._reference_ratios.get(BoundModel.PROBABILISTIC),
        }

    @classmethod
    def from_entry(
        cls, entry: dict[str, Any], dtype: torch.dtype, periods: dict[int, float]
    ) -> Evaluation:
        ev = cls(
            OracleResult(
                entry["values"],
                entry["magnitudes"],
                entry["depths"],
                entry["peaks"],
                entry["quantizations"],
                entry["alternatives"],
                entry["picks"],
                entry["classes_known"],
            ),
            entry["reference"],
            dtype,
            entry["cotangents"],
            periods,
        )
        if entry.get("reference_ratio") is not None:
            ev._reference_ratios[BoundModel.PROBABILISTIC] = float(entry["reference_ratio"])
        return ev

    def reference_ratio(self, model: BoundModel = BoundModel.PROBABILISTIC) -> float:
        """The reference's own worst error in units of the bound it must keep: the arithmetic
        part divided by REFERENCE_MARGIN (tolerance.bound); above 1, the contract is
        under-specified on these inputs."""
        if model not in self._reference_ratios:
            self._reference_ratios[model] = max(
                (
                    m.worst_ratio
                    for m in self.mismatches(self.reference, model, tolerance.REFERENCE_MARGIN)
                ),
                default=0.0,
            )
        return self._reference_ratios[model]


@dataclass
class GateOptions:
    device: str = "cpu"
    dtypes: tuple[str, ...] | None = None  # None: the problem's KDIFF_DTYPES, else float32
    # RES-02's compile targets, judged in this order until one fails: sm_100 first, since it
    # holds every limit sm_90 does and tensor memory besides.
    targets: tuple[str, ...] = ("sm_100", "sm_90")
    seeds: int = 2  # random seeds per input distribution
    determinism_runs: int = 5
    # Judge at smaller sizes of the same problem when a benchmark input or a reference output
    # has more elements than this (gates.sizes.fit_sizes); None: the benchmark's own sizes.
    max_elements: int | None = None
    profile: Profile = Profile.FULL  # quick: CMP-03 at a few held-out shapes and variants
    # The seed of the draws chosen per verdict (GateContext.chosen_seed, the secret each
    # chosen draw's seed comes from) when one is given: a failure's trial label names it, so
    # it can be drawn again. None: a new secret seed.
    chosen_seed: int | None = field(default_factory=lambda: pinned_chosen_seed(os.environ))


# Draws at a seed chosen per verdict: every fixed draw of every gate can be made beforehand by
# anyone who holds kdiff's code, a candidate in its worker included, and answered from a table
# of fingerprints (tests/hostile/knows_the_judges_draws.py, knows_the_judges_regimes.py); a
# draw at a seed nobody knew before cannot. The verdict's chosen seed is a secret of
# CHOSEN_SECRET_BITS, and no draw is made at it: each draw takes a seed of its own, a keyed
# hash of what it is (chosen_draw_seed), wide enough to set its generator's whole state
# (kdiff.data.seeding.WIDE_SEEDS). Draws at one seed would share one stream (a normal is the
# Box-Muller of the uniforms the same seed gives, a scaled draw a copy), and torch's 32-bit
# seeding would let a candidate find that seed from the first chosen draw it is shown and
# make every other one (tests/hostile/recovers_the_chosen_seed.py).
CHOSEN_SECRET_BITS = 64
# The setting that pins that seed for a whole run (the test suite's, reproducing a failure):
# a seed known beforehand is one a candidate can have prepared for, so only to reproduce.
CHOSEN_SEED_SETTING = "KDIFF_CHOSEN_SEED"


def chosen_draw_seed(secret: int, draw: str) -> int:
    """The seed of the chosen draw named `draw` (a gate's id and what it draws, unique in a
    verdict) in the verdict of chosen seed `secret`: 128 bits of blake2b keyed by the secret,
    its top bit set so that it is a wide seed. One draw's seed says nothing of another's, nor
    of the secret."""
    digest = hashlib.blake2b(
        draw.encode(), key=secret.to_bytes(CHOSEN_SECRET_BITS // 8, "big"), digest_size=16
    ).digest()
    return (1 << 127) | int.from_bytes(digest, "big")


NOT_A_CHOSEN_SEED = f"not a seed (a whole number from 0 to 2^{CHOSEN_SECRET_BITS} - 1)"


def checked_chosen_seed(value: int) -> int:
    """`value` as a verdict's chosen seed (the key of chosen_draw_seed), a ValueError where it
    is none."""
    if not 0 <= value < 1 << CHOSEN_SECRET_BITS:
        raise ValueError(f"{value}: {NOT_A_CHOSEN_SEED}")
    return value


def pinned_chosen_seed(environment: Mapping[str, str]) -> int | None:
    """The chosen seed CHOSEN_SEED_SETTING pins, None where it is not set."""
    value = environment.get(CHOSEN_SEED_SETTING)
    if value is None:
        return None
    try:
        return checked_chosen_seed(int(value))
    except ValueError:
        raise ValueError(f"{CHOSEN_SEED_SETTING}={value!r}: {NOT_A_CHOSEN_SEED}") from None


class GateContext:
    def __init__(
        self,
        problem: ProblemModule,
        candidate: CandidateProcess,
        options: GateOptions | None = None,
    ) -> None:
        self.problem = problem
        self.candidate = candidate
        self.options = options or GateOptions()
        self.device = self.options.device
        # sizes -> the templates learned there: a gate goes back to the judged sizes after
        # its own (set_constants({})), and over half the learnings were of sizes seen before
        self._templates: dict[tuple, list[gen.InputTemplate]] = {}
        # (seed, dtype, sizes) -> the model and its buffers as built
        self._references: dict[tuple, tuple[torch.nn.Module, dict[str, torch.Tensor]]] = {}
        self._built: set[str] = set()
        # (seed, sizes) -> whether instances built there are redrawn (`trained`), and why not
        # where the reference has parameters to redraw (`kept_as_built`)
        self._trained: dict[tuple, bool] = {}
        self._kept_as_built: dict[tuple, str] = {}
        self._random_reference: str | None = None  # "" once checked and not random
        self._native_dtypes: set[torch.dtype] | None = None
        self._differentiated: tuple[int, ...] | None = None
        self._original_constants = problem.constants()
        # Trial sharing: a call's result by the digest of what it was made on, served again
        # to any gate that makes the same call while `sharing_calls` (Gate.shares_calls).
        self._calls: dict[str, CallResult] = {}
        self.sharing_calls = False
        self.calls_made = 0  # candidate calls sent to the worker
        # How many inputs each set the worker keeps by name holds (`store_inputs_as`): a call
        # on a kept set sends none, and its reply must give back as many as that set holds.
        self._kept_sizes: dict[str, int] = {}
        self.calls_served = 0  # candidate calls answered from an earlier one
        # The inputs a call of the reference changes in place (the contract lets a candidate
        # change those too), found the first time a call of the candidate changes one.
        self._reference_modifies: set[int] | None = None
        # One of the calls of the benchmark's instance with no option made so far, each as
        # likely, chosen by the verdict's secret (reservoir sampling): ORD-02 repeats it after
        # allocator churn. Its own first run stood at one place in a schedule that is the same
        # in every verdict of a problem, where a candidate that counts its requests answered
        # exactly (tests/hostile/knows_ord02s_place.py).
        self.earlier_call: EarlierCall | None = None
        self._plain_calls = 0
        self._earlier_choice: random.Random | None = None
        # The first caller's tensor a call of the running gate overwrote: an input the
        # reference leaves as it was, or an earlier output still held (the worker's report,
        # read by ORD-02 alone before: a kernel scribbled only in the gates judged after it,
        # tests/hostile/scribbles_after_ord02.py). A gate that would not fail on its own
        # fails for it (kdiff.gates.base). Reset by each gate.
        self.call_fault: CallFault | None = None
        # The native check's calls and their answers, which CMP-01 judges against the
        # oracle's bound: a gate's own call can be told from the harness's (its frames, the
        # reference's output held through it, its inputs: the benchmark's seed-42 draws),
        # and a kernel wrong only there was accepted by every gate
        # (tests/hostile/wrong_in_the_harness_frames.py, wrong_on_the_benchmarks_draws.py).
        self.native_answers: list[NativeAnswer] = []
        self._evaluations: dict[str, Evaluation] = {}
        # The content digest of a trial's inputs, taken once for the oracle's key and the
        # call's (a gate evaluates and calls on the same tensors).
        self._inputs_digests = DigestMemo()
        # On disk only where the judge's workers cannot write there: an entry a candidate
        # wrote would be the oracle of every later candidate of the problem.
        self.oracle_cache = OracleCache(
            problem.path, self.device, on_disk=candidate is None or candidate.writes_confined
        )
        # Whether the oracle's trace trusts its entries (_traced_oracle): on a GPU, where each
        # check is a synchronisation, until the reference is seen to write unseen.
        self.oracle_trusting = self.device.startswith("cuda")
        self.evaluations_computed = 0  # oracle evaluations neither in memory nor on disk
        # Draws on which the reference broke an earlier judge's CUDA context (draw_key).
        self.broken_draws: frozenset[str] = frozenset()
        # The secret the draws and sizes chosen for this verdict take their seeds from
        # (chosen_draw_seed); a judge going on from a resumable verdict takes that verdict's, so
        # that its broken draws name the same inputs.
        self.chosen_seed = (
            checked_chosen_seed(self.options.chosen_seed)
            if self.options.chosen_seed is not None
            else secrets.randbits(CHOSEN_SECRET_BITS)
        )
        # The sizes every gate judges at, the native check included ({}: the benchmark's).
        self.scaled: dict[str, int] = {}
        if self.options.max_elements is not None:
            self.scaled = sizes.fit_sizes(problem, self.options.max_elements)
        self.constants: dict[str, int] = {}
        self.set_constants({})
        # Why the problem is not judged at all: it cannot be brought under --max-elements.
        self.too_large: str | None = None
        if self.options.max_elements is not None:
            largest = sizes.largest_numel(problem)
            if largest > self.options.max_elements:
                at = (
                    ", ".join(f"{k}={v}" for k, v in self.constants.items())
                    or "the benchmark's sizes"
                )
                self.too_large = (
                    f"not judged: a tensor of {largest} elements at {at}, over "
                    f"--max-elements {self.options.max_elements}, and no smaller "
                    f"sizes of the problem run"
                )

    # -- inputs ---------------------------------------------------------------------------
    def templates(self) -> list[gen.InputTemplate]:
        """The inputs' templates at the sizes set now (learned from get_inputs(), a function
        of the problem at these sizes alone; gates only read them)."""
        key = self._sizes()
        if key not in self._templates:
            learned = gen.learn_templates(self.problem)
            self._confirm_sign_preconditions(learned)
            self._templates[key] = learned
        return self._templates[key]

    def _confirm_sign_preconditions(self, templates: list[gen.InputTemplate]) -> None:
        """An input the benchmark only ever drew non-negative (torch.rand) is a precondition
        only if the reference breaks on signed values (log, sqrt: non-finite outputs);
        otherwise signed values are fair game, and a shortcut that relies on the sign is
        exactly what CMP-01 must catch. Beside quantized data (gen.BYTE_DATA) an input never
        drawn negative is a scale, positive by the quantizer's making, and stays so."""
        if any(t.byte_data for t in templates):
            return
        for i, t in enumerate(templates):
            if not t.nonnegative:
                continue
            t.nonnegative = False
            signed = gen.realize(templates, gen.normal(), seed=99, only={i})
            t.nonnegative = True
            unsigned = gen.realize(templates, gen.normal(), seed=99, only={i})
            try:
                breaks = _nonfinite(self.run_reference(signed)) > _nonfinite(
                    self.run_reference(unsigned)
                )
            except ReferenceFailure:
                breaks = True
            t.nonnegative = breaks

    def benchmark_inputs(self, seed: int) -> list[Any]:
        return gen.draw_benchmark_inputs(self.problem, seed)

    def draw(self, strategy: gen.Strategy, seed: int) -> list[Any]:
        return gen.realize(self.templates(), strategy, seed)

    def working_dtypes(self) -> list[torch.dtype | None]:
        """The problem's own precision always (NATIVE); besides it, recasts to fp16/bf16
        where the problem declares them (KDIFF_DTYPES) or the user asks (--dtypes). float32
        names the native precision of a problem made in fp32."""
        names = self.options.dtypes or self.problem.declared("KDIFF_DTYPES", ())
        native = self.native_dtypes()
        recasts = [DTYPES[n] for n in names if DTYPES[n] not in native]
        return [NATIVE, *dict.fromkeys(recasts)]

    def native_dtypes(self) -> set[torch.dtype]:
        """The floating formats of the benchmark's inputs and the built reference."""
        if self._native_dtypes is None:
            model = self.reference()
            found = {
                t.dtype for t in [*model.parameters(), *model.buffers()] if tolerance.inexact(t)
            }
            found |= {t.example.dtype for t in self.templates() if t.floating}
            self._native_dtypes = found or {torch.float32}
        return self._native_dtypes

    def dtype_name(self, dtype: torch.dtype | None) -> str:
        """The precision a trial judges at, for a person: a recast's dtype, or the problem's
        own formats ("float32"; "float8_e4m3fn/float32" for fp8 data with fp32 scales)."""
        if dtype is not NATIVE:
            return DTYPE_NAMES[dtype]
        return "/".join(sorted(str(d).removeprefix("torch.") for d in self.native_dtypes()))

    def periods(self) -> dict[int, float]:
        """Outputs the problem declares defined modulo a period (KDIFF_PERIODIC_OUTPUTS =
        {output index: period}: an angle state mod 2 pi), judged around the circle."""
        declared = self.problem.declared("KDIFF_PERIODIC_OUTPUTS", None) or {}
        periods = {int(i): float(p) for i, p in dict(declared).items()}
        if not all(math.isfinite(p) and p > 0 for p in periods.values()):
            raise ValueError(
                f"KDIFF_PERIODIC_OUTPUTS: periods must be finite and positive, not {declared!r}"
            )
        return periods

    def arithmetic(self, dtype: torch.dtype | None) -> torch.dtype:
        """The precision the working run computes in, which the bound is derived for: the
        accumulation the problem's contract declares (KDIFF_ACCUMULATION), by default fp32,
        as every bf16, fp16 and fp8 GEMM of cuBLAS, CUTLASS and Triton's tl.dot accumulates
        unless told otherwise, and as torch computes bf16 and fp16 elementwise ops and
        reductions (in fp32, rounding the result): at the problem's own precision and at a
        recast to bf16 or fp16 alike, whose reference is torch's, each op's result stored in
        the recast's format (the oracle counts those roundings). A recast finer than the
        declared accumulation computes in its own dtype."""
        declared = DTYPES[self.problem.declared("KDIFF_ACCUMULATION", "float32")]
        if dtype is NATIVE or tolerance.unit_roundoff(dtype) >= tolerance.unit_roundoff(declared):
            return declared
        return dtype

    def float_input_indices(self) -> list[int]:
        return [i for i, t in enumerate(self.templates()) if t.floating and t.free_count]

    def no_free_inputs(self) -> str:
        """Why no floating input has a position a gate may change."""
        why = "no floating input with free positions"
        if any(t.floating and t.example.numel() for t in self.templates()):
            why += (
                ": get_inputs() draws the same values at every seed, so every position "
                "is taken as structural (a generator it seeds itself other than through "
                "torch.manual_seed, which kdiff varies, cannot be told from a constant)"
            )
        return why

    @property
    def scaled_sizes(self) -> dict[str, tuple[int, int]]:
        """constant -> (benchmark, judged), for the sizes scaled down to fit."""
        return {n: (self._original_constants[n], v) for n, v in self.scaled.items()}

    def set_constants(self, constants: dict[str, int]) -> None:
        """Change the problem's module-level sizes (shape polymorphism) or select one of its
        variants, on top of the scaled sizes when the benchmark's are too large. {} restores
        the sizes judged at and the benchmark's own configuration."""
        judged = {**self.scaled, **constants}
        self.problem.set_sizes({**self._original_constants, **judged})
        self.constants = judged

    # -- models ---------------------------------------------------------------------------
    def init_inputs(self, seed: int) -> list[Any]:
        gen.set_seed(seed)
        return self.problem.get_init_inputs()

    def reference(
        self, seed: int = BENCHMARK_SEED, dtype: torch.dtype | None = NATIVE
    ) -> torch.nn.Module:
        key = (seed, dtype, self._sizes())
        if key not in self._references:
            init = self.init_inputs(seed)
            with torch.no_grad():
                gen.set_seed(seed)
                try:
                    model = self.problem.Model(*init)
                except Exception as exc:  # noqa: BLE001
                    raise ReferenceFailure(f"reference does not build: {exc}") from None
                if seed != BENCHMARK_SEED:
                    self._pair_parameters(seed, model)
                if self.trained(seed):
                    redraw_trainable(model, seed)
                # The mode the benchmark runs it in: KernelBench never calls eval(), so
                # BatchNorm normalises by the batch and Dropout drops (a random reference,
                # `random_reference`).
                model = recast_module(model, self.device, dtype)
            buffers = {n: b.detach().clone() for n, b in model.named_buffers()}
            self._references[key] = (model, buffers)
        model, buffers = self._references[key]
        # Each evaluation starts from the buffers as built, as the benchmark's first trial
        # does: training-mode BatchNorm does not read its running statistics, but it updates
        # them, and after a gate's inputs near the range's end they would hold variances past
        # fp32's range, which the oracle would trace into every later trial's peak.
        with torch.no_grad():
            for name, b in model.named_buffers():
                b.copy_(buffers[name])
        return model

    def trained(self, seed: int) -> bool:
        """Whether an instance built at `seed` holds its trainable parameters redrawn, as
        another trained model's (kdiff.data.trained): every instance but the benchmark's
        own, which its harness builds as constructed, where the reference has parameters to
        redraw and the candidate's pair with them (`kept_as_built`)."""
        if seed == BENCHMARK_SEED:
            return False
        key = self._sized(seed)
        if key not in self._trained:
            try:
                self.reference(seed)  # pairs the parameters as it builds
            except ReferenceFailure as exc:
                self._trained[key] = False
                self._kept_as_built[key] = f"the reference does not build at seed {seed}: {exc}"
        return self._trained[key]

    def kept_as_built(self, seed: int) -> str | None:
        """Why instances built at `seed`, another seed than the benchmark's, keep the
        reference's parameters as built (a sentence), or None where they are redrawn or it
        has none to redraw: a candidate whose tensors are not the reference's one for one (a
        weight held as a buffer, transposed, fused with another, or copied at init beside
        its parameter) would hold values unlike the reference's once redrawn, and an honest
        kernel fail. The worker reports the candidate's; a false report gains at most these
        instances as they were before any was redrawn."""
        self.trained(seed)
        return self._kept_as_built.get(self._sized(seed))

    def _sized(self, seed: int) -> tuple:
        """An instance's key in `_trained` and `_kept_as_built`: its seed and the sizes it
        is built at."""
        return seed, self._sizes()

    def _sizes(self) -> tuple:
        """The sizes set now (set_constants), as a key."""
        return tuple(sorted(self.constants.items()))

    def _pair_parameters(self, seed: int, built: torch.nn.Module) -> None:
        """Decides `trained(seed)` from the reference `built` at `seed`, before any redraw,
        and the candidate's tensors as the worker builds them there."""
        key = self._sized(seed)
        if key in self._trained:
            return
        ours = held(built, seed)
        if not any(t.trainable for t in ours):  # nothing to redraw: nor the candidate's
            self._trained[key] = False
            return
        if self.candidate is None:  # the reference alone (in process): as one that pairs
            self._trained[key] = True
            return
        try:
            reply = self.candidate.request("held", seed=seed,
                                           init_inputs=self.init_inputs(seed),
                                           constants=self.constants)
            theirs = [Held(str(name), str(value), moved is True)
                      for name, value, moved in reply["held"]]
        except CandidateFailure as exc:
            why = f"the candidate does not build at seed {seed}: {exc}"
        except (KeyError, TypeError, ValueError):
            why = "the worker's report of the candidate's tensors is malformed"
        else:
            why = unpaired(ours, theirs)
        self._trained[key] = why is None
        if why is not None:
            self._kept_as_built[key] = why

    def history_dependence(self) -> str | None:
        """Why the reference's output depends on the calls before it, or None: a buffer its
        forward updates (a running average it subtracts) that changes its next output on
        the same inputs and seed. Every evaluation here starts from the buffers as built;
        the candidate's instance keeps its own across calls (resetting them would tell
        kdiff's calls from a caller's), so such a problem has no judgement that is fair to
        both. Training-mode BatchNorm updates its statistics without reading them: no."""
        model = self.reference()
        built = {n: b.detach().clone() for n, b in model.named_buffers()}
        if not built:
            return None
        inputs = self.to_device(self.benchmark_inputs(0), NATIVE)
        outputs = []
        with torch.no_grad():
            for _ in range(2):
                gen.set_seed(BENCHMARK_SEED)
                try:
                    out = model(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs])
                except Exception:  # noqa: BLE001 - the gates report a reference that raises
                    return None
                outputs.append(
                    [
                        o.detach().clone()
                        for o in (out if isinstance(out, (tuple, list)) else [out])
                        if isinstance(o, torch.Tensor)
                    ]
                )
        changed = [n for n, b in model.named_buffers() if not torch.equal(b, built[n])]
        self.reference()  # its buffers as built again
        if not changed or all(tolerance.bitwise_equal(a, b) for a, b in zip(*outputs)):
            return None
        return (
            f"the reference's output depends on the calls before it: its forward "
            f"updates buffer `{changed[0]}`, and its next output on the same inputs "
            f"differs; kdiff judges a model whose calls are independent"
        )

    def candidate_key(
        self, seed: int = BENCHMARK_SEED, dtype: torch.dtype | None = NATIVE, instance: str = ""
    ) -> str:
        """The worker's name for the candidate built with `seed` and `dtype` (built on first
        use); another `instance` name builds a separate, fresh instance."""
        consts = ",".join(f"{k}={v}" for k, v in sorted(self.constants.items()))
        return self._built_in_worker(
            f"candidate:{seed}:{DTYPE_NAMES[dtype]}:{consts}:{instance}", "candidate", seed, dtype
        )

    def reference_key_in_worker(
        self, seed: int = BENCHMARK_SEED, dtype: torch.dtype | None = NATIVE
    ) -> str:
        return self._built_in_worker(
            f"reference:{seed}:{DTYPE_NAMES[dtype]}", "reference", seed, dtype
        )

    def _built_in_worker(self, key: str, role: str, seed: int, dtype: torch.dtype | None) -> str:
        if key not in self._built:
            self.candidate.request(
                "build",
                key=key,
                role=role,
                seed=seed,
                dtype=DTYPE_NAMES[dtype],
                init_inputs=self.init_inputs(seed),
                constants=self.constants,
                trained=self.trained(seed),
            )
            self._built.add(key)
        return key

    # -- running --------------------------------------------------------------------------
    def to_device(self, inputs: list[Any], dtype: torch.dtype | None = None) -> list[Any]:
        if dtype is not None:
            inputs = gen.cast_inputs(inputs, dtype)
        return [x.to(self.device) if isinstance(x, torch.Tensor) else x for x in inputs]

    def run_reference(
        self,
        inputs: list[Any],
        seed: int = BENCHMARK_SEED,
        dtype: torch.dtype | None = NATIVE,
        cotangents: list[torch.Tensor] | None = None,
    ) -> list[torch.Tensor]:
        return self._reference_call(inputs, seed, dtype, cotangents)[0]

    def run_reference_sharing(
        self,
        inputs: list[Any],
        seed: int = BENCHMARK_SEED,
        cotangents: list[torch.Tensor] | None = None,
    ) -> tuple[list[torch.Tensor], set[str]]:
        """The reference's outputs (its gradients after them, given `cotangents`), and what
        storage they share with its inputs and with each other (a view, an expand, a
        broadcast; one gradient for the addends of a sum): the same sharing in a candidate
        is the problem's contract, not a defect."""
        outs, args = self._reference_call(inputs, seed, NATIVE, cotangents)
        return outs, set(shared_storage(outs, args))

    def inputs_the_reference_modifies(self, inputs: list[Any]) -> set[int]:
        """The indices of the inputs a call of the reference changes in place (on copies:
        `inputs` stay as they are): the contract lets a candidate change those too."""
        after = self._reference_call(inputs, BENCHMARK_SEED, NATIVE, None)[1]
        return {
            i
            for i, (a, x) in enumerate(zip(after, inputs))
            if isinstance(x, torch.Tensor) and not tolerance.bitwise_equal(a.cpu(), x.cpu())
        }

    def _reference_call(
        self,
        inputs: list[Any],
        seed: int,
        dtype: torch.dtype | None,
        cotangents: list[torch.Tensor] | None,
    ) -> tuple[list[torch.Tensor], list[Any]]:
        """The reference's outputs, and the arguments it was called with."""
        model = self.reference(seed, dtype)
        # Copies: what the reference writes into its inputs (GPU MODE's output buffers) must
        # not reach the candidate, which is sent the same inputs next.
        args = [
            a.clone() if isinstance(a, torch.Tensor) else a for a in self.to_device(inputs, dtype)
        ]
        if cotangents is not None:
            args = differentiable(args, self.differentiated)
        self._refuse_broken_draw(inputs, seed, dtype)
        self._device_clean()
        try:
            with torch.set_grad_enabled(cotangents is not None):
                out = model(*args)
                outs = list(out) if isinstance(out, (tuple, list)) else [out]
                outs = [o if isinstance(o, torch.Tensor) else torch.tensor(o) for o in outs]
                if cotangents is not None:
                    wrt = [args[i] for i in self.differentiated]
                    outs = [o.detach() for o in outs] + input_gradients(outs, wrt, cotangents)
            self._synchronize()  # a device-side assert surfaces here, not in a later gate
        except Exception as exc:  # noqa: BLE001
            error = f"{type(exc).__name__}: {exc}"
            if sticky_device_error(error):
                raise ReferenceBrokeDevice(
                    f"the reference broke the judge's CUDA context: {error}",
                    self.draw_key(inputs, seed, dtype),
                ) from None
            raise ReferenceFailure(f"reference raised {error}") from None
        return outs, args

    def inputs_digest(self, inputs: list[Any], dtype: torch.dtype | None) -> str:
        """What names the values the oracle and the candidate are given for `inputs` at
        `dtype` (gen.cast_inputs, a function of both): the content digest of both."""
        return self._inputs_digests([str(dtype), *inputs])

    def draw_key(self, inputs: list[Any], seed: int, dtype: torch.dtype | None) -> str | None:
        """What names one reference run's draw across judges: the inputs as the gate passed
        them (on the host), the seed, the dtype and the problem's sizes; None where an input
        is on the device (unreadable once the context broke) or is an object whose repr may
        name its address (another judge would name the same draw otherwise)."""
        if not all(_names_the_same_everywhere(x) for x in inputs):
            return None
        return digest(inputs, seed, str(dtype), sorted(self.constants.items()))

    def _refuse_broken_draw(self, inputs: list[Any], seed: int, dtype: torch.dtype | None) -> None:
        """A draw on which the reference broke an earlier judge's CUDA context is outside the
        problem's contract: refused as the CPU's ReferenceFailure, without running it."""
        if self.broken_draws and self.draw_key(inputs, seed, dtype) in self.broken_draws:
            raise ReferenceFailure(
                "reference broke a judge's CUDA context on these inputs (a device-side assert)"
            )

    def _synchronize(self) -> None:
        if self.device.startswith("cuda"):
            torch.cuda.synchronize()

    def _device_clean(self) -> None:
        """Raises JudgeDeviceBroken where an error of the judge's earlier work is pending on
        its device: what the reference is about to run must not be blamed for it."""
        try:
            self._synchronize()
        except Exception as exc:  # noqa: BLE001
            raise JudgeDeviceBroken(
                f"the judge's CUDA context broke before the reference ran: "
                f"{type(exc).__name__}: {exc}"
            ) from None

    def evaluate(
        self,
        inputs: list[Any],
        seed: int = BENCHMARK_SEED,
        dtype: torch.dtype | None = NATIVE,
        magnitudes: bool = True,
    ) -> Evaluation:
        """The oracle (float64, on the judge's device) and the working-precision reference.
        The oracle sees the inputs as rounded to the working precision, so that it judges
        the computation, not the rounding of the inputs, and knows the format each input and
        parameter is stored in there. Gates that only read the oracle's values or depths
        pass magnitudes=False and skip the costly magnitude trace. Cached in memory for this
        candidate and on disk for every candidate of the problem (kdiff.judging.oracle_cache);
        one traced with magnitudes serves a request without."""
        content = self.inputs_digest(inputs, dtype)
        # The entry traced with magnitudes first: it serves both kinds of request.
        keys = [
            digest(
                content,
                # an instance as built (where the parameters do not pair) answers no trained one
                (seed, "trained") if self.trained(seed) else seed,
                str(dtype),
                sorted(self.constants.items()),
                traced,
                self.differentiated,
            )
            for traced in (True, False)[: 2 - magnitudes]
        ]
        for key in keys:
            if key in self._evaluations:
                return self._evaluations[key]
        for key in keys:
            entry = OracleCache.load(self.oracle_cache.path(key), self.device)
            if entry is not None:
                ev = Evaluation.from_entry(entry, self.arithmetic(dtype), self.periods())
                self._evaluations[key] = ev
                return ev
        ev = self.evaluate_uncached(gen.cast_inputs(inputs, dtype), seed, dtype, magnitudes)
        self._evaluations[keys[-1]] = ev
        if magnitudes:
            # every thresholded trial asks it, and every later candidate would compare the
            # same reference with the same oracle again (a fifth of the gates' judge time
            # with two candidates a problem on the CPU, under py-spy)
            ev.reference_ratio()
        OracleCache.store(self.oracle_cache.path(keys[-1]), ev.entry())
        return ev

    def evaluate_uncached(
        self,
        rounded: list[Any],
        seed: int = BENCHMARK_SEED,
        dtype: torch.dtype | None = NATIVE,
        magnitudes: bool = True,
    ) -> Evaluation:
        """`evaluate` computed now, on inputs already rounded to `dtype`."""
        self.evaluations_computed += 1
        reference = self.run_reference(rounded, seed, dtype)  # refuses a broken draw
        cotangents = self.cotangents(reference) if self.backward else None
        if cotangents is not None:
            reference = self.run_reference(rounded, seed, dtype, cotangents)
        working = self.reference(seed, dtype)
        stored = {n: t.dtype for n, t in [*working.named_parameters(), *working.named_buffers()]}
        self._device_clean()
        try:
            oracle = self._traced_oracle(
                rounded, seed, cotangents, magnitudes, self.arithmetic(dtype), stored
            )
            self._synchronize()
        except Exception as exc:  # noqa: BLE001
            if sticky_device_error(f"{type(exc).__name__}: {exc}"):
                raise ReferenceBrokeDevice(
                    f"the float64 oracle broke the judge's CUDA context: {exc}",
                    self.draw_key(rounded, seed, dtype),
                ) from None
            raise ReferenceFailure(f"reference cannot run in float64: {exc}") from None
        return Evaluation(
            oracle,
            [r.detach() for r in reference],
            self.arithmetic(dtype),
            cotangents,
            self.periods(),
        )

    def _traced_oracle(
        self,
        rounded: list[Any],
        seed: int,
        cotangents: list[torch.Tensor] | None,
        magnitudes: bool,
        arithmetic: torch.dtype,
        stored: dict[str, torch.dtype],
    ) -> OracleResult:
        """The float64 oracle on the judge's device. While `oracle_trusting` the trace trusts
        its entries (no synchronisation per traced operand); where an entry it used had been
        written over unseen, the oracle runs again from the same random state, checking each
        one: the result is always the checking trace's."""
        trusting = self.oracle_trusting
        model = self.reference(seed, torch.float64)  # built (and seeded) before the state
        state = random_state(self.device) if trusting else None
        try:
            return run_oracle(
                model,
                self.to_device(rounded),
                cotangents,
                magnitudes,
                arithmetic,
                stored,
                self.differentiated,
                trusting=trusting,
            )
        except TrustedStaleEntry:
            self.oracle_trusting = False  # this reference writes unseen: check from now on
            set_random_state(self.device, state)
            return run_oracle(
                self.reference(seed, torch.float64),
                self.to_device(rounded),
                cotangents,
                magnitudes,
                arithmetic,
                stored,
                self.differentiated,
            )

    def random_reference(self) -> str | None:
        """Why the reference's values cannot be judged element by element, or None. Two runs
        of the working-precision reference on the same inputs, each within the bound b of the
        oracle if the reference is a function of its inputs at this precision, are within 2b
        of each other; beyond 2b at least one run misses its own bound: a random operator
        (dropout in training mode, sampling). Rounding-level differences (a GPU's atomics)
        stay inside."""
        if self._random_reference is None:
            # Cached once decided, never before: a check that broke must not leave "not
            # random" behind for the gates after it (it raises instead: the gate's error).
            try:
                inputs = self.benchmark_inputs(RANDOMNESS_SEED)
                bounds = self.evaluate(inputs).bounds()
                # Both runs made now, one after the other: a cached evaluation holds an earlier
                # process's run, which a seeded random reference repeats exactly.
                once = self.run_reference(inputs)
                again = self.run_reference(inputs)
            except ReferenceFailure:
                self._random_reference = ""  # no two runs to compare: taken as a function
                return None
            worst = max(
                (
                    tolerance.compare(a, r, 2 * b, i).worst_ratio
                    for i, (a, r, b) in enumerate(zip(again, once, bounds))
                ),
                default=0.0,
            )
            self._random_reference = (
                f"the reference is random: two runs on the same inputs differ by "
                f"{worst:.3g}x twice the bound"
                if worst > 1
                else ""
            )
        return self._random_reference or None

    @property
    def backward(self) -> bool:
        """A problem that declares KDIFF_BACKWARD is judged on its VJP too: the gradients
        against the inputs it declares differentiable follow the outputs."""
        return bool(self.differentiated)

    @property
    def differentiated(self) -> tuple[int, ...]:
        """The get_inputs() positions whose gradients are judged (kdiff.data.differentiated):
        every floating input's for `KDIFF_BACKWARD = True`, those it names for a tuple, none
        for a problem judged on its forward alone. A declaration that names no floating
        input raises LoadError (`declaration_error`)."""
        if self._differentiated is None:
            self._differentiated = self._resolve_differentiated()
        return self._differentiated

    def _resolve_differentiated(self) -> tuple[int, ...]:
        declared = self.problem.declared(DECLARATION, False)
        if not declares_backward(declared):
            return ()
        return differentiated_inputs(
            declared,
            ForwardParameters.of(self.problem.Model),
            [t.example for t in self.templates()],
            self.problem.path,
        )

    def declaration_error(self) -> str | None:
        """Why the problem's KDIFF_BACKWARD cannot be judged (one line naming the file and
        the cause), or None: asked before anything is judged, an error of the problem's."""
        try:
            self._differentiated = self._resolve_differentiated()
        except LoadError as exc:
            return str(exc)
        return None

    @staticmethod
    def cotangents(outputs: list[torch.Tensor]) -> list[torch.Tensor]:
        """Fixed random output gradients (a seeded normal draw per output). An integer output
        has no gradient: zeros, its draw made all the same so that the others' stay put."""
        gen_ = torch.Generator().manual_seed(4242)
        draws = [torch.randn(o.shape, generator=gen_, dtype=torch.float64) for o in outputs]
        return [
            d.to(o.dtype) if tolerance.inexact(o) else torch.zeros(o.shape, dtype=o.dtype)
            for d, o in zip(draws, outputs)
        ]

    def call(
        self,
        inputs: list[Any],
        seed: int = BENCHMARK_SEED,
        dtype: torch.dtype | None = NATIVE,
        instance: str = "",
        **options: Any,
    ) -> CallResult:
        key = self.candidate_key(seed, dtype, instance)
        payload = [
            x.cpu() if isinstance(x, torch.Tensor) else x for x in gen.cast_inputs(inputs, dtype)
        ]
        if self.backward:
            if "cotangents" not in options:
                shapes = self.run_reference(payload, seed, dtype)
                options["cotangents"] = self.cotangents(shapes)
            options["differentiated"] = list(self.differentiated)
        shared = None
        if self.sharing_calls and options.keys() <= SHAREABLE_OPTIONS:
            shared = digest(key, self.inputs_digest(inputs, dtype), options)
            if shared in self._calls:
                self.calls_served += 1
                return self._calls[shared]
        result = self._call(key, payload, seed, dtype, options)
        if self.call_fault is None:
            self.call_fault = self._fault(inputs, payload, options, result)
        # At the sizes judged at: ORD-02 judges the call again there, against the reference
        # built at them (a CMP-03 call at other sizes was judged against the wrong shape).
        if (not options and not instance and dtype is NATIVE and seed == BENCHMARK_SEED
                and self.constants == self.scaled):
            self._maybe_kept_for_repeat(inputs, result)
        if shared is not None:
            self._calls[shared] = result
        return result

    def _maybe_kept_for_repeat(self, inputs: list[Any], result: CallResult) -> None:
        """`earlier_call` becomes this call with probability 1 / (plain calls so far)."""
        self._plain_calls += 1
        if self._earlier_choice is None:
            self._earlier_choice = random.Random(
                chosen_draw_seed(self.chosen_seed, "ORD-02 earlier call")
            )
        if self._earlier_choice.randrange(self._plain_calls) == 0:
            kept = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
            self.earlier_call = EarlierCall(kept, result)

    def _fault(
        self, inputs: list[Any], sent: list[Any], options: dict[str, Any], result: CallResult
    ) -> CallFault | None:
        """What the call overwrote of its caller's tensors: an input (where its gate does not
        judge that itself), else an earlier output still held, handed out again or changed;
        None where nothing."""
        if not options.keys() & INPUTS_JUDGED_BY_GATE:
            written = self.input_written(inputs, sent, result.inputs_after, " by a call")
            if written is not None:
                return CallFault("input_mutated", written)
        if result.reused:
            # Its bytes may be the ones handed out before (the same values asked twice), so
            # that `written` stays 0: a caller that changes one answer in place changes the
            # other (tests/hostile/reuses_after_ord02.py).
            return CallFault(
                "output_aliasing",
                f"output {result.reused[0]} shares storage with an output of an earlier "
                f"call, still held (one buffer handed out twice)",
            )
        if result.written:
            return CallFault(
                "output_aliasing",
                f"{result.written} output(s) of earlier calls, still held, changed after "
                f"they were handed out (written by a call or by work left running)",
            )
        return None

    def input_written(
        self, inputs: list[Any], sent: list[Any], after: list[Any] | None, how: str = ""
    ) -> str | None:
        """The first input a call changed that the reference leaves unchanged, described
        ("input i modified in place`how`: ..."; `sent`: `inputs` as the call sent them;
        `after`: the judge's reading of the arena on the CPU, the reply's on CUDA); None
        where there is none. Which inputs the reference changes is read once a verdict, the
        first time a call changes one."""
        changed = [
            i
            for i, (x, a) in enumerate(zip(sent, after or []))
            if isinstance(x, torch.Tensor)
            and isinstance(a, torch.Tensor)
            and not tolerance.bitwise_equal(a.cpu(), x.cpu())
        ]
        if not changed:
            return None
        if self._reference_modifies is None:
            self._reference_modifies = self.inputs_the_reference_modifies(inputs)
        for i in changed:
            if i not in self._reference_modifies:
                a, x = after[i].cpu(), sent[i].cpu()
                n = int((a != x).sum()) if a.shape == x.shape else x.numel()
                return (
                    f"input {i} modified in place{how}: {n} of {x.numel()} elements "
                    f"changed (the reference leaves it unchanged)"
                )
        return None

    @contextlib.contextmanager
    def shared_calls(self, share: bool) -> Iterator[None]:
        """Within: calls are shared between gates (`share`) or always sent."""
        before, self.sharing_calls = self.sharing_calls, share
        try:
            yield
        finally:
            self.sharing_calls = before

    def _call(
        self, key: str, payload: list[Any], seed: int, dtype: torch.dtype, options: dict[str, Any]
    ) -> CallResult:
        self.calls_made += 1
        reply = self.request_judged_alone(
            lambda timeout: self.candidate.request(
                "call", timeout=timeout, key=key, inputs=payload, **options
            ),
            payload,
            seed,
            dtype,
            calls=1,
            # inputs kept in the worker do not survive the restart after a timeout
            retry=not options.get("use_stored_inputs"),
        )
        if options.get("store_inputs_as"):
            self._kept_sizes[options["store_inputs_as"]] = len(payload)
        kept = options.get("use_stored_inputs")
        try:  # aliasing is judged here, from the payload
            # As many inputs back as the call had: the judge's own reading of them (the
            # arena's) is paired with the reply's item by item, and a shorter list dropped it.
            parsed = CallReply.parse(reply, self._kept_sizes[kept] if kept else len(payload))
        except MalformedReply as exc:
            raise UnusableOutput(str(exc)) from None
        # The inputs after the call as the judge read them from the arena (a CPU worker's),
        # else as the payload has them.
        read = reply.get(JUDGE_READ_INPUTS) or [None] * len(parsed.inputs_after)
        after = [
            mine if mine is not None else theirs for mine, theirs in zip(read, parsed.inputs_after)
        ]
        return CallResult(
            parsed.outputs, parsed.aliases, parsed.seconds, after, parsed.written, parsed.reused
        )

    def request_judged_alone(
        self,
        send: Callable[[float | None], dict],
        inputs: list[Any],
        seed: int,
        dtype: torch.dtype | None,
        calls: int,
        retry: bool = True,
    ) -> dict:
        """`send(timeout)`; a timeout is judged again before it counts as a hang, since load
        on the machine (other judges, other users) can stretch an honest call past the call
        timeout: alone among kdiff's calls (CALL_LOCK), with a budget of HANG_FACTOR times
        the reference's time measured now on `inputs`, for the `calls` model calls the
        request makes (at least the call timeout). A candidate already known to hang (its
        timeout confirmed alone) is not judged again: a hang costs about two timeouts. An
        error of memory exhaustion (MEMORY_EXHAUSTED) is judged again alone too: the other
        judges' calls then neither run nor allocate (their workers' caches stay held)."""
        known_to_hang = self.candidate.hangs.first is not None
        try:
            with CALL_LOCK.held(exclusive=False, waiting=self.candidate):
                return send(None)
        except CandidateRaised as exc:
            if not retry or not any(m in exc.detail for m in MEMORY_EXHAUSTED):
                raise
            with CALL_LOCK.held(exclusive=True, waiting=self.candidate):
                try:
                    return send(None)
                except CandidateRaised as again:
                    again.detail = f"{again.detail} (also when judged again alone)"
                    raise
        except CandidateTimeout as exc:
            if isinstance(exc, CandidateOverBudget) or not retry or known_to_hang:
                raise
            first = exc.detail
        with CALL_LOCK.held(exclusive=True, waiting=self.candidate):
            reference = self.reference_seconds(inputs, seed, dtype)
            budget = max(
                self.candidate.limits.call_timeout, HANG_FLOOR_S, HANG_FACTOR * reference * calls
            )
            try:
                reply = send(budget)
            except CandidateTimeout as exc:
                if not isinstance(exc, CandidateOverBudget):
                    exc.detail = (
                        f"{first}; again alone, no answer within {budget:.3g} s "
                        f"({HANG_FACTOR:g}x the reference's {reference:.3g} s per "
                        f"call)"
                    )
                raise
        self.candidate.hangs.excuse()
        return reply

    def reference_seconds(self, inputs: list[Any], seed: int, dtype: torch.dtype | None) -> float:
        """The reference's time for one call on `inputs`, in the judge, after a warm-up
        call. Not in the candidate's worker: its code, imported there, can slow the
        reference's calls down and pass its own hang off as a busy machine."""
        seconds = 0.0
        for _ in range(2):
            start = time.perf_counter()
            self.run_reference(inputs, seed, dtype)
            seconds = time.perf_counter() - start
        if seconds > self.candidate.limits.call_timeout:
            raise MachineTooBusy(
                f"the reference itself took {seconds:.3g} s, past the call timeout of "
                f"{self.candidate.limits.call_timeout:g} s: too busy a machine to judge a "
                f"timeout"
            )
        return seconds


def _nonfinite(outputs: list[torch.Tensor]) -> int:
    return sum(
        int((~torch.isfinite(tolerance.comparable(o))).sum())
        for o in outputs
        if o.is_floating_point()
    )


class OutputStructureError(CandidateFailure):
    signature = "output_mismatch"


def check_structure(got: list[torch.Tensor], expected: list[torch.Tensor]) -> None:
    if len(got) != len(expected):
        raise OutputStructureError(f"{len(got)} outputs, the reference returns {len(expected)}")
    for i, (g, e) in enumerate(zip(got, expected)):
        if tuple(g.shape) != tuple(e.shape):
            raise OutputStructureError(
                f"output {i} has shape {tuple(g.shape)}, the reference's is {tuple(e.shape)}"
            )
        # Part of the contract as the shape is: a caller stores, sends or indexes with it.
        if g.dtype != e.dtype:
            raise OutputStructureError(
                f"output {i} has dtype {g.dtype}, the reference's is {e.dtype}"
            )
