"""PRC-03 judges only where the same-precision reference is finite and accurate and no
intermediate behind an output left the working format's range: there, whether a kernel
overflows is the order of its arithmetic, which the contract leaves free."""
from __future__ import annotations

from pathlib import Path

from kdiff.data.model import Case, Status
from kdiff.judging.plugins import manager
from kdiff.judging.runconfig import RunConfig
from kdiff.verdicts.judge import judge_case

SIGMOID_CONV_PROBLEM = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, w):
        return torch.sigmoid(nn.functional.conv2d(x, w))


def get_inputs():
    return [torch.randn(1, 3, 5, 5), torch.randn(2, 3, 3, 3)]


def get_init_inputs():
    return []
'''

# The direct sum of products, as TritonBench's generated sigmoid_conv2d computes it: near
# sqrt(max) every product is +-inf and the sum NaN, where torch's fp32 conv happens to give
# +-inf (and the sigmoid 0 or 1).
DIRECT_SUM_CANDIDATE = '''
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, w):
        cols = nn.functional.unfold(x, w.shape[-2:])                   # [1, 27, L]
        terms = cols[0].T[:, None, :] * w.reshape(w.shape[0], -1)[None]  # [L, 2, 27]
        out = terms.sum(-1).T.reshape(1, w.shape[0], x.shape[2] - 2, x.shape[3] - 2)
        return torch.sigmoid(out)
'''


def test_an_overflow_inside_the_reference_is_not_judged(tmp_path: Path):
    problem = tmp_path / "93_SigmoidConv.py"
    problem.write_text(SIGMOID_CONV_PROBLEM)
    candidate = tmp_path / "direct_sum.py"
    candidate.write_text(DIRECT_SUM_CANDIDATE)
    verdict = judge_case(Case("direct-sum", problem, candidate),
                         RunConfig(native="kernelbench-v0.1", gates=["PRC-03"]), manager())
    assert verdict.native.accept is True, verdict.native.reason
    result = verdict.gates["PRC-03"]
    assert result.status is Status.PASS, result.detail
