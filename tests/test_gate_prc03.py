"""PRC-03 judges only where the same-precision reference is finite and accurate and no
intermediate behind an output left the working format's range: there, whether a kernel
overflows is the order of its arithmetic, which the contract leaves free."""
from __future__ import annotations

from pathlib import Path

import pytest

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


# The reference squares in fp32 and stores an fp16 result: at inputs past sqrt(fp16's max)
# the squares leave fp16's range but not fp32's.
FP16_RMS_PROBLEM = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return (x.float() ** 2).mean(-1).sqrt().to(x.dtype)


def get_inputs():
    return [torch.randn(16, 64, dtype=torch.float16)]


def get_init_inputs():
    return []
'''

RMS_CANDIDATES = {  # the norm in fp32 (honest); the squares in fp16, where they overflow
    "fp32_norm": "torch.linalg.vector_norm(x.float(), dim=-1).div(x.shape[-1] ** 0.5).to(x.dtype)",
    "fp16_squares": "(x * x).float().mean(-1).sqrt().to(x.dtype)",
}


@pytest.mark.parametrize("kernel, status", [("fp32_norm", Status.PASS),
                                            ("fp16_squares", Status.FAIL)])
def test_an_intermediate_is_judged_against_its_own_formats_range(tmp_path: Path, kernel: str,
                                                                  status: Status):
    """An fp16 output with fp32 squares behind it: the trace compared every intermediate
    with the output's format, so wherever the squares passed fp16's maximum (every trial near
    the range's end) no element was judged, and a kernel that squares in fp16 and returns
    inf there passed. Each intermediate is held to its own format's range now."""
    problem = tmp_path / "rms_fp16.py"
    problem.write_text(FP16_RMS_PROBLEM)
    candidate = tmp_path / f"{kernel}.py"
    candidate.write_text("import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
                         f"    def forward(self, x):\n        return {RMS_CANDIDATES[kernel]}\n")
    verdict = judge_case(Case(kernel, problem, candidate),
                         RunConfig(native="kernelbench-v0.1", gates=["PRC-03"]), manager())
    assert verdict.native.accept is True, verdict.native.reason
    result = verdict.gates["PRC-03"]
    assert result.status is status, result.detail
