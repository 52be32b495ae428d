"""ORD-02 reports a nondeterministic output whatever its strides (KBF #68's transposed-conv
output is not viewable as one dimension, and the gate's report itself once raised there)."""
from __future__ import annotations

from pathlib import Path

from kdiff.data.model import Case, Status
from kdiff.judging.context import GateOptions
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
