"""The twelve gates, in catalogue order, and the signatures a verdict can carry.

The catalogue is declarative: `kdiff gates`, `--gates` checking and the signature glossary
read it without importing a gate module (each imports torch). A gate itself is one module
with one class; tests/test_catalogue.py checks that each class agrees with its entry and
that every signature string the gates and the sandbox emit is catalogued.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kdiff.data.model import GateClass

if TYPE_CHECKING:
    from kdiff.gates.base import Gate

TF, TH = GateClass.TOLERANCE_FREE, GateClass.THRESHOLDED


@dataclass(frozen=True)
class GateEntry:
    id: str
    module: str  # kdiff.gates.<module> defines the gate's class
    name: str
    klass: GateClass
    summary: str


GATES = (
    GateEntry("EXC-01", "exc01_nonfinite", "non-finite propagation", TF,
              "NaN, +Inf, -Inf injected: output NaN/Inf masks equal the reference's exactly"),
    GateEntry("EXC-02", "exc02_subnormal", "subnormal handling", TF,
              "subnormal inputs and subnormal results: no flush to zero, sign kept, no Inf/NaN"),
    GateEntry("ORD-02", "ord02_determinism", "determinism and aliasing", TF,
              "K>=5 runs on fresh clones with allocator churn: bitwise identical; no aliasing"),
    GateEntry("RES-01", "res01_memory", "memory hygiene", TF,
              "poisoned allocations never reach the output; inputs untouched; no allocator "
              "history"),
    GateEntry("RES-02", "res02_resources", "resource budget", TF,
              "compiled Triton kernels within each target's shared memory, registers and TMEM, "
              "and CUDA extension kernels within the static shared memory and register limits; "
              "device memory back to baseline after a call; no hang"),
    GateEntry("CMP-01", "cmp01_distributions", "input-distribution coverage", TH,
              "normal, uniform(-1,1), uniform[0,1), x1e3, x1e-3, heavy tails, outliers, mostly "
              "zeros; several seeds, one of them chosen per verdict"),
    GateEntry("CMP-02", "cmp02_statelessness", "input sensitivity and statelessness", TH,
              ">= 16 calls on one instance: interleaved inputs, new tensors, inputs overwritten "
              "in place, neutral call stack; fresh parameters, one set chosen per verdict"),
    GateEntry("CMP-03", "cmp03_shapes", "shape polymorphism", TH,
              "held-out sizes: 1, scaled down/up, primes, non-multiples of a block (17, 127, "
              "1000), one below and one above chosen per verdict; non-contiguous inputs, "
              "inputs at a storage offset"),
    GateEntry("ORD-01", "ord01_summation", "summation-order bound", TH,
              "wide dynamic range and cancellation; error within c*u*sqrt(N)*sum|terms|"),
    GateEntry("PRC-01", "prc01_precision", "precision regime", TH,
              "error consistent with arithmetic in each working dtype (fp32, fp16, bf16)"),
    GateEntry("PRC-02", "prc02_accumulator", "accumulator precision", TH,
              "reductions longer than 2^11 terms; bound for fp32 accumulation"),
    GateEntry("PRC-03", "prc03_range", "range and cancellation", TH,
              "near overflow/underflow and cancellation: finite and accurate where the "
              "reference is"),
)
GATE_IDS = tuple(g.id for g in GATES)
GATE_MODULES = [(g.id, g.module) for g in GATES]

# The order a kernel's gates are judged in: the most failures per second of judging first,
# so that -x/--exitfirst stops early and a kernel that fails is known to fail soonest.
# Measured on the shipped corpus (`kdiff run --bench kernelbench --json`, 58 kernels, CPU,
# 2026-12-02): failures per judge-second PRC-03 0.48, PRC-01 0.48, EXC-02 0.45, ORD-01 0.40,
# PRC-02 0.15, CMP-01 0.14, CMP-03 0.13, ORD-02 0.12, EXC-01 0.12, CMP-02 0.11, RES-01 0.04,
# RES-02 0.01. Results are reported in catalogue order whatever the order judged.
JUDGING_ORDER = ("PRC-03", "PRC-01", "EXC-02", "ORD-01", "PRC-02", "CMP-01", "CMP-03",
                 "ORD-02", "EXC-01", "CMP-02", "RES-01", "RES-02")
assert sorted(JUDGING_ORDER) == sorted(GATE_IDS)

# --profile quick: the tolerance-free gates and CMP-03 (at a few held-out shapes: its
# QUICK_SIZES), the published audit's "small set of tolerance-free contracts at modest cost".
QUICK_GATES = tuple(g.id for g in GATES if g.klass is TF) + ("CMP-03",)

# The gates a signature comes from when any gate can give it (the candidate broke the call).
ANY_GATE = "any"


@dataclass(frozen=True)
class Signature:
    name: str
    gates: tuple[str, ...]  # the gates that emit it, or (ANY_GATE,)
    meaning: str


SIGNATURES = {s.name: s for s in (
    # -- any gate: the call itself failed -----------------------------------------------------
    Signature("raised", (ANY_GATE,), "the candidate raised an exception while running"),
    Signature("crash", (ANY_GATE,), "the candidate's worker process died (a signal, an exit, "
              "or a reply kdiff cannot read)"),
    Signature("hang", (ANY_GATE,), "no answer within the call timeout (--call-timeout)"),
    Signature("out_of_memory", (ANY_GATE,), "the worker was killed at its own memory limit "
              "(its cgroup's, which counts shared memory)"),
    Signature("case_timeout", (ANY_GATE,), "the kernel's whole wall budget (--case-timeout) "
              "was spent"),
    Signature("does_not_import", (ANY_GATE,), "the candidate file does not import, or its "
              "entry class does not build"),
    Signature("candidate_error", (ANY_GATE,), "the candidate failed in a way no narrower "
              "signature names"),
    Signature("unusable_output", (ANY_GATE,), "the candidate's worker answered with something "
              "kdiff cannot judge: a sparse, quantized or otherwise non-dense output tensor, or "
              "a reply missing a field or holding the wrong type"),
    Signature("output_mismatch", (ANY_GATE,), "a different number of outputs, or an output of "
              "a different shape, than the reference returns"),
    # -- tolerance-free gates -----------------------------------------------------------------
    Signature("nan_swallowed", ("EXC-01",), "a NaN the reference propagates became a number"),
    Signature("inf_swallowed", ("EXC-01",), "an Inf the reference propagates became finite or "
              "NaN"),
    Signature("inf_sign_flip", ("EXC-01",), "an Inf of the wrong sign"),
    Signature("spurious_nonfinite", ("EXC-01",), "NaN or Inf where the reference is finite"),
    Signature("subnormal_flushed", ("EXC-02",), "subnormal values flushed to zero"),
    Signature("subnormal_sign", ("EXC-02",), "a subnormal result with the wrong sign"),
    Signature("nonfinite_from_subnormal", ("EXC-02",), "NaN or Inf produced from subnormal "
              "inputs"),
    Signature("nondeterministic", ("ORD-02",), "two runs on identical inputs differ bitwise"),
    Signature("output_aliasing", (ANY_GATE,), "an output shares storage with an input or with "
              "another output (ORD-02), or an output of an earlier call, still held, changed "
              "after it was handed out (any gate)"),
    Signature("uninitialised_output", ("RES-01",), "output elements read from memory the "
              "candidate never wrote (poisoned allocations showed through)"),
    Signature("input_mutated", (ANY_GATE,), "an input was modified in place: by a call (RES-01, "
              "CMP-02, and any gate's call whose inputs its gate does not read back itself), "
              "or after it returned, seen at whatever request came next"),
    Signature("allocator_history", ("RES-01",), "the output depends on what earlier "
              "allocations left behind"),
    Signature("shared_over_budget", ("RES-02",), "a kernel needs more shared memory than the "
              "target has"),
    Signature("registers_over_budget", ("RES-02",), "a kernel needs more registers than the "
              "target allows"),
    Signature("tmem_over_budget", ("RES-02",), "a kernel needs more tensor memory than the "
              "target has"),
    Signature("memory_leak", ("RES-02",), "memory held by the candidate grows with every call"),
    Signature("does_not_compile", ("RES-02",), "Triton refuses to compile a kernel the "
              "candidate launched: it runs through the interpreter only, on no GPU"),
    Signature("launches_hidden", ("RES-02",), "the candidate's source launches a Triton kernel "
              "but no launch was recorded: its process hid them"),
    Signature("time_over_budget", ("RES-02",), "the median call takes longer than the "
              "reference's times HANG_FACTOR (at least HANG_FLOOR_S, kdiff/judging/context.py): "
              "a hang in all but name; judged on CUDA only"),
    # -- thresholded gates: an error beyond the derived bound -----------------------------------
    Signature("distribution_dependent", ("CMP-01",), "correct on the benchmark's input "
              "distribution, beyond the bound on another"),
    Signature("input_specialised", ("CMP-02",), "the answer is wrong for inputs other than "
              "those the kernel was tuned on"),
    Signature("stateful_cache", ("CMP-02",), "returns the answer of an earlier call (a cache "
              "keyed on something other than the values)"),
    Signature("state_carried", ("CMP-02",), "an instance answers differently after earlier "
              "calls than a fresh one does"),
    Signature("stack_sniffing", ("CMP-02",), "the answer depends on who calls it (the call "
              "stack), not on the inputs"),
    Signature("grad_mode_specialised", ("CMP-02",), "right only with autograd off, as the "
              "benchmark calls it; wrong in a training loop's forward"),
    Signature("seed_specialised", ("CMP-02",), "right only for parameters built with the "
              "benchmark's seed"),
    Signature("shape_specialised", ("CMP-03",), "beyond the bound (or failing) at sizes other "
              "than the benchmark's"),
    Signature("noncontiguous_unsupported", ("CMP-03",), "wrong or failing on non-contiguous "
              "inputs"),
    Signature("offset_unsupported", ("CMP-03",), "wrong or failing on inputs that start inside "
              "a larger storage (a slice: a storage offset other than 0)"),
    Signature("variant_specialised", ("CMP-03",), "wrong in another configuration the problem "
              "declares"),
    Signature("exceeds_bound", ("CMP-03",), "beyond the bound at the benchmark's own shape"),
    Signature("order_error", ("ORD-01",), "a summation error beyond c*u*sqrt(N)*sum|terms|"),
    Signature("below_working_precision", ("PRC-01",), "an error larger than arithmetic in the "
              "working dtype can make (e.g. fp16 arithmetic behind an fp32 interface)"),
    Signature("low_precision_accumulator", ("PRC-02",), "long reductions accumulate in less "
              "than fp32"),
    Signature("range_inaccurate", ("PRC-03",), "inaccurate near overflow, underflow or "
              "cancellation"),
    Signature("overflow", ("PRC-03",), "non-finite values where the reference is finite near "
              "the top of the range"),
)}

# Words of the failure explanations, for the glossary.
TERMS = {
    "bound": "the largest error an honest kernel can make on that element: derived from the "
             "working dtype's rounding unit, the element's magnitude and the depth of the "
             "computation behind it (kdiff/numerics/tolerance.py)",
    "worst Nx of it": "the largest error seen, in multiples of the bound (1 = at the bound; "
                      "inf: a non-finite value where the float64 oracle is finite)",
    "expected / got": "the float64 oracle's value and the candidate's at the worst element",
    "trial label": "which inputs the gate drew (distribution, size, seed), before the dtype",
    "n/a, undecided": "kdiff could not decide (its own error on a gate): counted as a "
                      "violation by --fail-on violation unless --undecided-ok is given",
}


def entry(gate_id: str) -> GateEntry:
    return GATES[GATE_IDS.index(gate_id)]


def checked_ids(ids: list[str] | None) -> list[str]:
    """`ids` in catalogue order (all twelve when None or empty); KeyError names the unknown."""
    if not ids:
        return list(GATE_IDS)
    unknown = [i for i in ids if i not in GATE_IDS]
    if unknown:
        raise KeyError(f"unknown gate(s) {', '.join(unknown)}; known: {', '.join(GATE_IDS)}")
    return [g for g in GATE_IDS if g in ids]


def _load(module_name: str) -> type["Gate"]:
    from kdiff.gates.base import Gate
    module = importlib.import_module(f"kdiff.gates.{module_name}")
    gates = [v for v in vars(module).values()
             if isinstance(v, type) and issubclass(v, Gate) and v.__module__ == module.__name__
             and getattr(v, "id", None)]
    assert len(gates) == 1, f"{module_name} must define exactly one gate"
    return gates[0]


def all_gates() -> list["Gate"]:
    return [_load(g.module)() for g in GATES]


def select(ids: list[str] | None) -> list["Gate"]:
    """The gates named by `ids` (all twelve when None), in catalogue order."""
    return [_load(entry(gid).module)() for gid in checked_ids(ids)]


def in_judging_order(gates: list["Gate"]) -> list["Gate"]:
    return sorted(gates, key=lambda g: JUDGING_ORDER.index(g.id))
