"""CMP-02 input sensitivity and statelessness, three states per defect: the honest kernel of
the problem passes, the defective one fails with the signature of the call pattern that broke
it, and KernelBench v0.1's native check accepts both."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kdiff.data.model import Case, Status, Verdict
from kdiff.gates.cmp02_statelessness import MIN_CALLS, _same
from kdiff.judging.plugins import manager
from kdiff.judging.runconfig import RunConfig
from kdiff.verdicts.judge import judge_case

KERNELS = Path(__file__).resolve().parents[1] / "kernels"
PROBLEMS = KERNELS / "KernelBench" / "level1"

# problem file, the signature its red-team kernel (sample 0) must fail with
PAIRS = [
    ("31_ELU.py", "stateful_cache"),  # output memoised by input pointer
    ("33_LayerScale.py", "seed_specialised"),  # parameters pinned to seed 42
    ("36_RMSNorm_.py", "stack_sniffing"),  # exact only under run_and_check_correctness
    ("37_FrobeniusNorm_.py", "state_carried"),  # normaliser cached after warm-up
]


def judge(problem: str, run: str) -> Verdict:
    pid = problem.split("_")[0]
    candidate = KERNELS / "runs" / run / f"level_1_problem_{pid}_sample_0_kernel.py"
    case = Case(f"{run}/{candidate.stem}", PROBLEMS / problem, candidate)
    return judge_case(case, RunConfig(native="kernelbench-v0.1", gates=["CMP-02"]), manager())


@pytest.mark.parametrize("problem,signature", PAIRS, ids=[p for p, _ in PAIRS])
def test_honest_passes_and_defective_fails(problem: str, signature: str):
    honest, defective = judge(problem, "controls"), judge(problem, "redteam")
    assert honest.native.accept is True, honest.native.reason
    assert defective.native.accept is True, defective.native.reason
    good, bad = honest.gates["CMP-02"], defective.gates["CMP-02"]
    assert good.status is Status.PASS, good.detail
    calls = int(good.detail.split(" calls")[0])
    assert calls >= MIN_CALLS + 2, good.detail  # the sequence plus the fresh-seed instances
    assert bad.status is Status.FAIL, bad.detail
    assert bad.signature == signature, bad.detail
    assert bad.worst_ratio > 1


GDN = KERNELS / "gdn" / "kernelbench"


# The GDN varlen problem through the interpreter, 15 s: in the `slow` set.
@pytest.mark.slow
def test_packing_memoised_by_tensor_identity_is_caught_through_integer_inputs():
    """The packed varlen GDN problem draws its packing with the other inputs, so CMP-02's
    in-place calls rewrite the kept `cu_seqlens` with another valid packing: a candidate that
    keeps its plan of the packing per tensor object (as fla's `tensor_cache` does) answers
    with the old one. With a fixed packing (the problem before) it passed every call."""
    problem = GDN / "KernelBench" / "level3" / "5_GatedDeltaNetVarlen.py"
    verdicts = {}
    for run in ("controls", "redteam"):
        candidate = GDN / "runs" / run / "level_3_problem_5_sample_0_kernel.py"
        verdicts[run] = judge_case(Case(f"{run}/{candidate.stem}", problem, candidate),
                                   RunConfig(native="kernelbench-v0.1", gates=["CMP-02"]),
                                   manager())
    for verdict in verdicts.values():
        assert verdict.native.accept is True, verdict.native.reason
    good, bad = verdicts["controls"].gates["CMP-02"], verdicts["redteam"].gates["CMP-02"]
    assert good.status is Status.PASS, good.detail
    assert bad.status is Status.FAIL, bad.detail
    assert bad.signature == "state_carried", bad.detail
    assert "overwritten in place" in bad.detail, bad.detail


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_inputs_compare_across_devices():
    """What the worker kept comes back on the candidate's device; the judge's draw is on its
    own (a kdiff error on every GPU MODE problem before)."""

    x = torch.randn(4)
    assert _same([x], [x.cuda()]) and not _same([x], [(x + 1).cuda()])
