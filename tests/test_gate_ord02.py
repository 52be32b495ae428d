"""ORD-02 reports a nondeterministic output whatever its strides (KBF #68's transposed-conv
output is not viewable as one dimension, and the gate's report itself once raised there)."""
from __future__ import annotations

from pathlib import Path

from kdiff.data.model import Case, Status
from kdiff.data.problem import load_problem
from kdiff.judging.context import CallResult, GateContext, GateOptions
from kdiff.judging.plugins import manager
from kdiff.judging.runconfig import RunConfig
from kdiff.verdicts.judge import judge_case

PROBLEM = (Path(__file__).parent / "fixtures" / "kernelbench_checkout" / "KernelBench"
           / "level1" / "1_Double.py")

# Each call perturbs one element more than the last, and returns a column-major output.
DRIFTING_TRANSPOSED = '''
import torch
import torch.nn as nn

CALLS = [0]


class ModelNew(nn.Module):
    def forward(self, x):
        CALLS[0] += 1
        y = (x * 2.0).t().contiguous().t()
        y[0, 0] += CALLS[0] * 2.0 ** -20
        return y
'''


def test_a_nondeterministic_strided_output_fails_with_its_count(tmp_path):
    candidate = tmp_path / "drifting.py"
    candidate.write_text(DRIFTING_TRANSPOSED)
    config = RunConfig(gates=["ORD-02"], gate_options=GateOptions(device="cpu"))
    verdict = judge_case(Case(id="drifting", problem=PROBLEM, candidate=candidate), config,
                         manager(), "kernelbench")
    ord02 = verdict.gates["ORD-02"]
    assert ord02.status is Status.FAIL and ord02.signature == "nondeterministic", ord02
    assert "1 of 64 elements" in ord02.detail


# A reference whose outputs are views of its inputs, as torch.broadcast_tensors' are.
BROADCASTING = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return torch.broadcast_tensors(a, b)


def get_inputs():
    return [torch.randn(4, 1), torch.randn(1, 3)]


def get_init_inputs():
    return []
'''
SAME_VIEWS = '''
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a.expand(4, 3), b.expand(4, 3)
'''
# Its second output is a view of the first input: sharing the reference does not have.
CROSSED_VIEW = '''
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a.expand(4, 3), a.expand(4, 3)
'''


def test_outputs_sharing_storage_as_the_references_do_are_its_contract(tmp_path):
    """torch.broadcast_tensors returns views of its inputs: a candidate doing the same is
    not aliasing its outputs wrongly; one whose sharing the reference lacks still fails."""
    problem = tmp_path / "broadcast.py"
    problem.write_text(BROADCASTING)
    config = RunConfig(gates=["ORD-02"], gate_options=GateOptions(device="cpu"))
    verdicts = {}
    for name, source in (("same_views", SAME_VIEWS), ("crossed_view", CROSSED_VIEW)):
        candidate = tmp_path / f"{name}.py"
        candidate.write_text(source)
        verdicts[name] = judge_case(Case(id=name, problem=problem, candidate=candidate),
                                    config, manager(), "kernelbench").gates["ORD-02"]
    assert verdicts["same_views"].status is Status.PASS, verdicts["same_views"]
    assert "shared storage as the reference's" in verdicts["same_views"].detail
    crossed = verdicts["crossed_view"]
    assert crossed.status is Status.FAIL and crossed.signature == "output_aliasing", crossed


# A clamp to [-1, 1] whose benchmark inputs lie in [0, 1): there it changes nothing.
CLAMP = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.clamp(-1.0, 1.0)


def get_inputs():
    return [torch.rand(4, 8)]


def get_init_inputs():
    return []
'''

# Hands back the input itself wherever the clamp would change nothing (kernels/runs/redteam
# 8/0, the "ghost branch"): right values, but the caller's input is its output.
RETURNS_ITS_INPUT_IN_RANGE = '''
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x if bool((x.abs() <= 1).all()) else x.clamp(-1.0, 1.0)
'''


def test_an_output_that_is_an_input_where_the_benchmarks_inputs_lie_fails(tmp_path):
    """ORD-02 repeats an earlier gate's call, chosen by the verdict's secret, which may lie
    anywhere a gate draws (CMP-01's x1e3, outside the range where this kernel aliases): its
    one call on the benchmark's own draw finds the aliasing at every secret."""
    problem, candidate = tmp_path / "clamp.py", tmp_path / "returns_input.py"
    problem.write_text(CLAMP)
    candidate.write_text(RETURNS_ITS_INPUT_IN_RANGE)
    for chosen_seed in range(1, 7):
        config = RunConfig(gates=["CMP-01", "ORD-02"],
                           gate_options=GateOptions(device="cpu", chosen_seed=chosen_seed))
        verdict = judge_case(Case(id="returns_input", problem=problem, candidate=candidate),
                             config, manager(), "kernelbench")
        assert verdict.gates["CMP-01"].status is Status.PASS, verdict.gates["CMP-01"]
        ord02 = verdict.gates["ORD-02"]
        assert ord02.status is Status.FAIL and ord02.signature == "output_aliasing", \
            (chosen_seed, ord02)


def test_ord02s_first_run_is_a_call_at_the_sizes_it_is_judged_at(monkeypatch):
    """ORD-02 makes its first run of an earlier plain call and judges it against the
    reference at the sizes judged at: a CMP-03 call at other sizes was kept too, and an honest
    kernel failed `output_mismatch` (control 33_0 at chosen seeds 7 and 8 of 1 to 12: output
    (16, 1), the reference's (16, 1024))."""
    ctx = GateContext(load_problem(PROBLEM), candidate=None)
    monkeypatch.setattr(ctx, "_built_in_worker", lambda key, *rest: key)
    monkeypatch.setattr(ctx, "_call", lambda key, payload, *rest: CallResult(payload, [], 0.0))
    ctx.set_constants({"batch_size": 3})
    for _ in range(8):
        ctx.call(ctx.benchmark_inputs(0))
    assert ctx.earlier_call is None
    ctx.set_constants({})
    ctx.call(ctx.benchmark_inputs(0))
    assert ctx.earlier_call is not None
