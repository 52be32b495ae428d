"""Quantized problems judged at their own precision: 8-bit integer data (int8, packed int4)
keeps its dtype and range and is drawn over every bit pattern, never given a floating draw,
its scales stay positive, and the gates tell the corpus's int8 and int4 controls from its red
team (problems 103 and 104). fp8 outputs are classified and compared, with the bound of the
format's rounding."""
from __future__ import annotations

import types
from pathlib import Path

import pytest
import torch

from kdiff.data.model import Case, Status, Verdict
from kdiff.data.problem import ProblemModule, load_problem
from kdiff.judging.plugins import manager
from kdiff.judging.runconfig import RunConfig
from kdiff.numerics import inputs as gen
from kdiff.numerics import tolerance
from kdiff.verdicts.judge import judge_case

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "kernels" / "KernelBench" / "level1"
RUNS = ROOT / "kernels" / "runs"
FIXTURES = ROOT / "tests" / "fixtures"
W8A8 = PROBLEMS / "103_W8A8_Matmul_int8.py"
W4 = PROBLEMS / "104_W4A32_Matmul_int4.py"
FP8_OUT = FIXTURES / "precision" / "fp8_output_problem.py"


def judge(problem: Path, candidate: Path, gates: list[str]) -> Verdict:
    case = Case(f"quantized/{candidate.stem}", problem, candidate)
    return judge_case(case, RunConfig(native="kernelbench-v0.1", gates=gates), manager())


def kernel(run: str, pid: int, sample: int) -> Path:
    return RUNS / run / f"level_1_problem_{pid}_sample_{sample}_kernel.py"


def problem_of(get_inputs) -> ProblemModule:
    module = types.ModuleType("quantized_inputs")
    module.get_inputs = get_inputs
    return ProblemModule(Path("quantized_inputs.py"), module)


def test_byte_data_is_drawn_over_every_bit_pattern_and_indices_are_kept():
    def get_inputs():
        q = torch.randint(-127, 128, (64, 32), dtype=torch.int8)  # symmetric: never -128
        mask = torch.randint(0, 2, (64,), dtype=torch.uint8)
        index = torch.randint(0, 64, (8,))
        return [q, mask, index, torch.rand(64)]

    templates = gen.learn_templates(problem_of(get_inputs))
    assert [t.byte_data for t in templates] == [True, False, False, False]
    drawn = gen.realize(templates, gen.normal(), seed=3)
    q = drawn[0]
    assert q.dtype == torch.int8 and int(q.min()) == -128 and int(q.max()) == 127
    assert not torch.equal(q, templates[0].example)
    for kept, template in zip(drawn[1:3], templates[1:3]):  # a 0/1 mask, indices
        assert torch.equal(kept, template.example)
    # drawing only some inputs leaves the byte data as the benchmark made it
    assert torch.equal(gen.realize(templates, gen.normal(), 3, only={3})[0],
                       templates[0].example)


def test_packed_int4_draws_reach_every_nibble_in_both_halves():
    templates = gen.learn_templates(load_problem(W4))
    assert [t.byte_data for t in templates] == [False, True, False]
    packed = gen.realize(templates, gen.normal(), seed=0)[1]
    assert packed.dtype == torch.uint8
    low, high = packed & 0xF, packed >> 4
    assert set(low.unique().tolist()) == set(range(16)) == set(high.unique().tolist())
    # the benchmark's own symmetric quantizer never makes the nibble -8 (0x8)
    assert not bool((templates[1].example & 0xF == 8).any())


@pytest.mark.parametrize("values, dtype, drawn", [
    ((0, 15), torch.uint8, (0, 15)),  # 4-bit codes one to a byte
    ((1, 15), torch.uint8, (0, 15)),  # a symmetric 4-bit quantizer's: 0 reached
    ((-7, 7), torch.int8, (-8, 7)),  # signed 4-bit codes
    ((-127, 127), torch.int8, (-128, 127)),  # int8 from a symmetric quantizer
    ((3, 200), torch.uint8, (0, 255)),  # packed nibbles: every byte
], ids=["uint4", "uint4-symmetric", "int4", "int8", "packed"])
def test_byte_data_is_drawn_over_the_narrowest_format_holding_the_problem_s(values, dtype,
                                                                               drawn):
    assert gen.code_range(torch.tensor(values, dtype=torch.float64), dtype) == drawn


NIBBLES = FIXTURES / "quantized" / "nibble_codes_problem.py"


@pytest.mark.parametrize("candidate, status", [
    ("nibble_codes_honest.py", Status.PASS),
    ("nibble_codes_minus_eight_as_zero.py", Status.FAIL),
], ids=["honest", "minus_eight_as_zero"])
def test_codes_held_one_to_a_byte_are_drawn_as_codes(candidate: str, status: Status):
    """4-bit codes in uint8 (gemlite's and HQQ's unpacked weights): a byte drawn above 15 is
    no code, and CMP-01 failed every honest kernel that keeps a code's 4 bits (gemlite's
    packing: 2047 of 2048 words off). Drawn over 0..15, the honest kernel passes, and the one
    reading -8 (code 0, which the benchmark never makes) as 0 still fails."""
    verdict = judge(NIBBLES, FIXTURES / "quantized" / candidate, ["CMP-01"])
    assert verdict.native.accept is True, verdict.native.reason
    assert verdict.gates["CMP-01"].status is status, verdict.gates["CMP-01"].detail


@pytest.mark.parametrize("candidate, status", [
    ("int8_codes_bf16_honest.py", Status.PASS),
    ("int8_codes_bf16_minus_128_as_128.py", Status.FAIL),
], ids=["honest", "minus_128_as_128"])
def test_codes_converted_to_bf16_are_judged_by_value_on_the_cpu(candidate: str,
                                                                 status: Status):
    """An integer converted to bf16 in a Triton kernel (gemlite's dequantizers) came out as
    bf16's bit pattern on the CPU: the honest kernel failed the native check and every gate.
    Converted by value, it passes, and the kernel reading -128 (never in the benchmark) as
    +128 still fails."""
    problem = FIXTURES / "quantized" / "int8_codes_bf16_problem.py"
    verdict = judge(problem, FIXTURES / "quantized" / candidate, ["CMP-01"])
    assert verdict.native.accept is True, verdict.native.reason
    assert verdict.gates["CMP-01"].status is status, verdict.gates["CMP-01"].detail


def test_a_quantized_problems_candidate_gets_int8_data_and_positive_scales():
    verdict = judge(W8A8, FIXTURES / "quantized" / "w8a8_asserting.py", ["CMP-01"])
    assert verdict.native.accept is True, verdict.native.reason
    assert verdict.gates["CMP-01"].status is Status.PASS, verdict.gates["CMP-01"].detail


@pytest.mark.parametrize("problem, gate, defective, signature", [
    (W8A8, "PRC-01", 0, "below_working_precision"),  # fp16 dequantize and accumulation
    (W8A8, "CMP-01", 1, "distribution_dependent"),  # -128 read as +128
    (W4, "CMP-03", 0, "shape_specialised"),  # group size fixed at the benchmark's
    (W4, "CMP-02", 1, None),  # dequantized weights kept by the packed tensor's pointer
])
def test_three_states_on_quantized_problems(problem, gate, defective, signature):
    pid = int(problem.name.split("_")[0])
    honest = judge(problem, kernel("controls", pid, 0), [gate])
    bad = judge(problem, kernel("redteam", pid, defective), [gate])
    assert honest.native.accept is True and bad.native.accept is True, bad.native.reason
    assert honest.gates[gate].status is Status.PASS, honest.gates[gate].detail
    assert bad.gates[gate].status is Status.FAIL, bad.gates[gate].detail
    assert signature in (None, bad.gates[gate].signature)


def test_the_underflow_term_is_half_the_smallest_subnormal():
    assert tolerance.underflow(torch.float8_e4m3fn) == 2.0 ** -10  # subnormal spacing 2^-9
    assert tolerance.underflow(torch.float16) == 2.0 ** -25
    e4m3 = torch.tensor([0.003, 2.0 ** -10 * 3]).to(torch.float8_e4m3fn).double()
    exact = torch.tensor([0.003, 2.0 ** -10 * 3], dtype=torch.float64)
    assert bool(((e4m3 - exact).abs() <= tolerance.underflow(torch.float8_e4m3fn)).all())


def test_fp8_outputs_are_classified_and_judged_by_e4m3s_rounding():
    honest = judge(FP8_OUT, FIXTURES / "precision" / "fp8_output_honest.py",
                   ["EXC-01", "CMP-01"])
    narrow = judge(FP8_OUT, FIXTURES / "precision" / "fp8_output_fnuz_range.py", ["CMP-01"])
    # upstream's allclose has no fp8 arithmetic: its check fails every fp8 output alike
    for verdict in (honest, narrow):
        assert verdict.native.accept is False and "allclose" in verdict.native.reason
    for gate in ("EXC-01", "CMP-01"):
        assert honest.gates[gate].status is Status.PASS, honest.gates[gate].detail
    assert "within the roundings to the stored format" in honest.gates["CMP-01"].detail
    result = narrow.gates["CMP-01"]
    assert result.status is Status.FAIL and "expected 448, got 240" in result.detail
