"""RES-01 memory hygiene, three states per defect: the honest kernel of the problem passes, the
defective one fails with its signature (an in-place ReLU: `input_mutated`; on CUDA, a
triangular matmul that never writes its lower tiles: `uninitialised_output`), and KernelBench
v0.1's native check accepts both. The allocator-history attribution is tested on its own."""
from __future__ import annotations

import functools
import math
from pathlib import Path

import pytest
import torch

from kdiff.data.model import Case, Status, Verdict
from kdiff.data.problem import load_problem
from kdiff.gates.res01_memory import HygieneLog, MemoryHygiene, bitwise_differs, poisoned
from kdiff.judging.context import CallResult, GateContext
from kdiff.judging.plugins import manager
from kdiff.judging.runconfig import RunConfig
from kdiff.sandbox.process import CandidateProcess
from kdiff.verdicts.judge import judge_case

KERNELS = Path(__file__).resolve().parents[1] / "kernels"
PROBLEMS = KERNELS / "KernelBench" / "level1"

# problem, honest sample, defective sample, the signature the defective one must fail with,
# the device (the skipped-tiles matmul passes the benchmark only through CUDA's allocator)
PAIRS = [
    pytest.param("19_ReLU.py", 20, 22, "input_mutated", "cpu", id="19_ReLU.py"),
    pytest.param("20_Matmul_for_upper_triangular_matrices.py", 1, 0, "uninitialised_output",
                 "cuda", id="20_Matmul_for_upper_triangular_matrices.py",
                 marks=pytest.mark.gpu),
]


@functools.lru_cache(maxsize=None)
def judge(problem: str, run: str, sample: int, device: str = "cpu") -> Verdict:
    pid = problem.split("_")[0]
    candidate = KERNELS / "runs" / run / f"level_1_problem_{pid}_sample_{sample}_kernel.py"
    case = Case(f"{run}/{candidate.stem}", PROBLEMS / problem, candidate)
    config = RunConfig(native="kernelbench-v0.1", gates=["RES-01"])
    config.gate_options.device = device
    return judge_case(case, config, manager())


def test_poison_and_bit_patterns():
    ref = torch.tensor([1.0, math.nan, 2.0])
    assert poisoned(torch.tensor([math.nan, math.nan, 2.0]), ref).tolist() == [True, False, False]
    assert poisoned(torch.tensor([5, -1, -1]), torch.tensor([5, -1, 3])).tolist() == \
        [False, False, True]
    assert bitwise_differs(torch.tensor([0.0, 1.0]), torch.tensor([-0.0, 1.0])).tolist() == \
        [True, False]


@pytest.mark.parametrize("problem,honest,defective,signature,device", PAIRS)
def test_honest_passes_and_defective_fails(problem: str, honest: int, defective: int,
                                          signature: str, device: str):
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    good = judge(problem, "controls", honest, device)
    bad = judge(problem, "redteam", defective, device)
    assert good.native.accept is True, good.native.reason
    assert bad.native.accept is True, bad.native.reason
    assert good.gates["RES-01"].status is Status.PASS, good.gates["RES-01"].detail
    result = bad.gates["RES-01"]
    assert result.status is Status.FAIL, result.detail
    assert result.signature == signature, result.detail


def test_allocator_history_is_told_from_rounding(tmp_path: Path):
    """Two calls that differ only in the last bit are rounding (ORD-02's business); a call
    whose value came from memory read before it was written is allocator history."""
    problem = PROBLEMS / "19_ReLU.py"
    with CandidateProcess(problem, tmp_path / "never_started.py") as unused:
        ctx = GateContext(load_problem(problem), unused)
        inputs = ctx.benchmark_inputs(0)
        ev = ctx.evaluate(inputs)
        ref = ev.reference[0]
        clean = CallResult([ref.clone()], [], 0.0)
        one_ulp = CallResult([torch.nextafter(ref, torch.full_like(ref, math.inf))], [], 0.0)
        stale = ref.clone()
        stale[3, 5] = 123.0
        gate = MemoryHygiene()
        log = HygieneLog()
        assert gate.check_history("set", clean, "after churn", one_ulp, ev, log) is None
        assert log.rounding_only
        result = gate.check_history("set", clean, "after churn", CallResult([stale], [], 0.0), ev,
                                    HygieneLog())
        assert result is not None and result.signature == "allocator_history", result
        assert "(3, 5)" in result.detail


def test_poison_is_seen_when_one_unpoisoned_call_holds_a_nan_by_chance(tmp_path: Path):
    """Uninitialised memory may hold a NaN in an unpoisoned call (freed bytes, an earlier
    call's poison): only a NaN every unpoisoned call produces is the candidate's own."""
    problem = PROBLEMS / "19_ReLU.py"
    with CandidateProcess(problem, tmp_path / "never_started.py") as unused:
        ctx = GateContext(load_problem(problem), unused)
        ev = ctx.evaluate(ctx.benchmark_inputs(0))
        ref = ev.reference[0]

        def call(*nan_at: tuple[int, int]) -> CallResult:
            out = ref.clone()
            for where in nan_at:
                out[where] = math.nan
            return CallResult([out], [], 0.0)

        gate = MemoryHygiene()
        poison = call((3, 5), (7, 1))
        result = gate.check_poison("set", poison, [call((3, 5)), call()], ev)
        assert result is not None and result.signature == "uninitialised_output", result
        assert "2 of" in result.detail and "(3, 5)" in result.detail
        own = gate.check_poison("set", poison, [call((3, 5), (7, 1)), call((3, 5), (7, 1))], ev)
        assert own is None  # the candidate's own NaN: the value gates judge it
        assert gate.check_poison("set", poison, [call((3, 5), (7, 1))], ev) is None


def test_an_input_the_reference_modifies_may_be_modified_by_the_candidate():
    """The reference rectifies its input in place; so does the candidate, as a clamp."""
    memory = Path(__file__).parent / "fixtures" / "memory"
    case = Case("clamp_in_place", memory / "relu_in_place.py", memory / "clamp_in_place.py")
    config = RunConfig(gates=["RES-01"])
    config.gate_options.device = "cpu"
    result = judge_case(case, config, manager()).gates["RES-01"]
    assert result.status is Status.PASS, result.detail
    assert "input(s) [0] not judged for mutation" in result.detail
