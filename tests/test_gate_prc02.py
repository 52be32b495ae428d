"""PRC-02 accumulator precision: how it finds a reduction of TARGET_DEPTH terms to judge."""
from __future__ import annotations

from pathlib import Path

import pytest

from kdiff.data.model import Case, Status
from kdiff.gates.prc02_accumulator import TARGET_DEPTH
from kdiff.judging.context import GateOptions
from kdiff.judging.plugins import manager
from kdiff.judging.runconfig import RunConfig
from kdiff.sandbox.process import SandboxLimits
from kdiff.verdicts.judge import judge_case

# A reduction whose depth has a fixed part: 100 elementwise steps, then a sum over `dim`
# (depth 100 + dim). Growing dim in proportion to the depth (64 -> 64 * 25 = 1600, depth
# 1700) falls short of 4096; the gate must grow it again rather than skip.
FIXED_PART_PROBLEM = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        for _ in range(100):
            x = x * 1.0
        return x.sum(dim=-1, keepdim=True)


batch_size = 2
dim = 64


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
'''

HONEST_CANDIDATE = FIXED_PART_PROBLEM.replace("class Model(", "class ModelNew(")


def test_a_reduction_with_a_fixed_part_is_grown_until_long_enough(tmp_path: Path):
    problem, candidate = tmp_path / "1_FixedPartSum.py", tmp_path / "candidate.py"
    problem.write_text(FIXED_PART_PROBLEM)
    candidate.write_text(HONEST_CANDIDATE)
    verdict = judge_case(Case("fixed_part", problem, candidate),
                         RunConfig(native="kernelbench-v0.1", gates=["PRC-02"]), manager())
    result = verdict.gates["PRC-02"]
    assert result.status is Status.PASS, result.detail
    grown = int(result.detail.split("reduction grown with dim=")[1].split(";")[0])
    assert 100 + grown >= TARGET_DEPTH, result.detail


class _MatmulSizes:
    """A stand-in context for a matmul (M, K) @ (K, N): the reduction is K long, and every
    depth the gate asks for is recorded with the sizes it was asked at."""

    def __init__(self) -> None:
        self.constants: dict[str, int] = {}
        self.asked: list[dict[str, int]] = []
        self.problem = None

    def set_constants(self, constants: dict[str, int]) -> None:
        self.constants = dict(constants)

    def size(self, name: str) -> int:
        return self.constants.get(name, {"M": 32, "K": 8, "N": 1000}[name])

    def numels(self) -> list[int]:
        return [self.size("M") * self.size("K"), self.size("K") * self.size("N")]

    def depth(self) -> int:
        self.asked.append(dict(self.constants))
        return self.size("K")


def test_a_size_that_is_no_reduction_is_given_up_at_twice_its_value(monkeypatch):
    from kdiff.gates import prc02_accumulator as prc02
    ctx = _MatmulSizes()
    monkeypatch.setattr(prc02, "_depth", lambda _ctx: ctx.depth())
    monkeypatch.setattr(prc02.sizes, "input_numels", lambda _problem: ctx.numels())
    assert prc02._grown(ctx, "M", 32, 8) is None
    assert ctx.asked == [{"M": 64}]  # not M = 16384, a 16M-element output, to learn it
    ctx.asked.clear()
    numel, grown = prc02._grown(ctx, "K", 8, 8) or (None, None)
    assert grown is None  # K = 4096 needs 4.2M input elements: over the budget
    assert ctx.asked == [{"K": 16}]
    monkeypatch.setattr(prc02, "ELEMENT_BUDGET", 2 ** 23)
    ctx.asked.clear()
    assert prc02._grown(ctx, "K", 8, 8) == (32 * 4096 + 4096 * 1000, {"K": 4096})
    assert ctx.asked == [{"K": 16}, {"K": 4096}]


# Row sums of 4 rows; PRC-02 grows `dim` to about 4096 terms.
ROW_SUM_PROBLEM = FIXED_PART_PROBLEM.replace(
    "        for _ in range(100):\n            x = x * 1.0\n", "").replace(
    "batch_size = 2", "batch_size = 4")

# An honest Triton row sum that reads one element a step, as scalar loops over a reduction
# do: through the interpreter each step is a few Python calls, so 4 x 4096 of them take
# seconds. Eight exact products a step keep it well past the call timeout however fast the
# interpreter gets: at one load and one add a step, kdiff's faster interpreter (4433200)
# finished the grown reduction inside 0.2 s and the gate passed.
SCALAR_LOOP_CANDIDATE = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _row_sum(x_ptr, out_ptr, n):
    row = tl.program_id(0)
    acc = tl.zeros((), dtype=tl.float32)
    for i in range(0, n):
        x = tl.load(x_ptr + row * n + i)
        for _ in range(8):
            x = x * 1.0
        acc += x
    tl.store(out_ptr + row, acc)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty(x.shape[0], 1)
        _row_sum[(x.shape[0],)](x.contiguous(), out, x.shape[1])
        return out
'''

# The same sum in blocks of 64, fast through the interpreter, accumulated in fp16.
FP16_BLOCKS_CANDIDATE = SCALAR_LOOP_CANDIDATE.replace('''    acc = tl.zeros((), dtype=tl.float32)
    for i in range(0, n):
        x = tl.load(x_ptr + row * n + i)
        for _ in range(8):
            x = x * 1.0
        acc += x
    tl.store(out_ptr + row, acc)''', '''    acc = tl.zeros((), dtype=tl.float16)
    for i in range(0, n, 64):
        offs = i + tl.arange(0, 64)
        acc += tl.sum(tl.load(x_ptr + row * n + offs, mask=offs < n, other=0.0).to(tl.float16))
    tl.store(out_ptr + row, acc.to(tl.float32))''')


# Right at the benchmark's 64 terms; blocks on an event at the grown reduction's.
STALLING_CANDIDATE = Path(__file__).parent / "hostile" / "stalls_on_long_reductions.py"


@pytest.mark.slow  # a timeout, then the retry's floor of HANG_FLOOR_S, twice: 8 s in all
def test_a_grown_reduction_the_interpreter_runs_past_the_call_timeout_is_not_a_hang(
        tmp_path: Path):
    """On the CPU, an honest kernel interpreted over the grown reduction ran past the call
    timeout twice and failed `hang`; one accumulating in fp16 still fails, and one that
    stalls there (asleep, computing nothing: kdiff.sandbox.runnable) fails `hang`: it was let
    off as the interpreter's time."""
    problem = tmp_path / "1_RowSum.py"
    problem.write_text(ROW_SUM_PROBLEM)
    config = RunConfig(native="kernelbench-v0.1", gates=["PRC-02"],
                       gate_options=GateOptions(device="cpu"),
                       limits=SandboxLimits(call_timeout=0.2))
    results = {}
    for name, source in (("scalar", SCALAR_LOOP_CANDIDATE), ("fp16", FP16_BLOCKS_CANDIDATE),
                         ("stalls", STALLING_CANDIDATE.read_text())):
        candidate = tmp_path / f"{name}.py"
        candidate.write_text(source)
        verdict = judge_case(Case(name, problem, candidate), config, manager())
        assert verdict.native.accept is True, verdict.native.reason
        results[name] = verdict.gates["PRC-02"]
    assert results["scalar"].status is Status.SKIP, results["scalar"].detail
    assert "through the Triton interpreter" in results["scalar"].detail
    assert results["fp16"].status is Status.FAIL, results["fp16"].detail
    assert results["fp16"].signature == "low_precision_accumulator"
    assert results["stalls"].status is Status.FAIL, results["stalls"].detail
    assert results["stalls"].signature == "hang", results["stalls"].detail
