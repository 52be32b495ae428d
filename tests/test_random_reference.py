"""A random reference (dropout in training mode): its values cannot be compared element by
element, so a value failure there is not judged (under_specified), while what does not depend
on values (an input overwritten) still fails; a deterministic reference is not affected."""
from __future__ import annotations

from pathlib import Path

from kdiff.data.model import Case, Status
from kdiff.judging import context as base
from kdiff.judging.context import GateOptions
from kdiff.judging.plugins import manager
from kdiff.judging.runconfig import RunConfig
from kdiff.verdicts.judge import judge_case

DROPOUT_PROBLEM = '''
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x):
        return F.dropout(x * 2.0, p=0.5, training=True)


batch_size = 8
dim = 64


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''

HONEST = DROPOUT_PROBLEM.replace("class Model(", "class ModelNew(")
DETERMINISTIC = DROPOUT_PROBLEM.replace("training=True", "training=False")
WRONG_FOR_DETERMINISTIC = DETERMINISTIC.replace("class Model(", "class ModelNew(").replace(
    "x * 2.0", "x * 2.001")
OVERWRITES_INPUT = HONEST.replace("return F.dropout(x * 2.0,",
                                  "x.mul_(2.0)\n        return F.dropout(x,")
GATES = ["EXC-01", "EXC-02", "ORD-02", "RES-01", "CMP-01", "CMP-02", "PRC-03"]


def judge(tmp_path: Path, problem: str, candidate: str):
    (tmp_path / "1_Dropout.py").write_text(problem)
    (tmp_path / "candidate.py").write_text(candidate)
    config = RunConfig(gates=GATES, gate_options=GateOptions(device="cpu"))
    return judge_case(Case("dropout", tmp_path / "1_Dropout.py", tmp_path / "candidate.py"),
                      config, manager(), "kernelbench")


def test_the_reference_itself_is_not_held_against_an_honest_dropout(tmp_path):
    verdict = judge(tmp_path, DROPOUT_PROBLEM, HONEST)
    statuses = {g: r.status for g, r in verdict.gates.items()}
    assert Status.FAIL not in statuses.values(), verdict.gates
    random = [r for r in verdict.gates.values() if "the reference is random" in r.detail]
    assert random and all(r.status is Status.UNDER_SPECIFIED for r in random)
    assert verdict.gates["ORD-02"].status is Status.UNDER_SPECIFIED  # two runs differ, as they must


def test_a_storage_failure_still_fails_against_a_random_reference(tmp_path):
    verdict = judge(tmp_path, DROPOUT_PROBLEM, OVERWRITES_INPUT)
    res01 = verdict.gates["RES-01"]
    assert res01.status is Status.FAIL and res01.signature == "input_mutated", res01


def test_a_deterministic_reference_keeps_its_value_failures(tmp_path):
    verdict = judge(tmp_path, DETERMINISTIC, WRONG_FOR_DETERMINISTIC)
    assert verdict.gates["CMP-01"].status is Status.FAIL, verdict.gates["CMP-01"]


def test_a_broken_randomness_check_is_an_error_not_a_failure(tmp_path, monkeypatch):
    """The check for a random reference runs only after a value failure; if it breaks (a kdiff
    bug), the failure is not known to say anything about the candidate: the gate reports
    kdiff's error, and no later gate inherits a cached 'not random'."""
    def broken(self, seed, *args, **kwargs):
        if seed == base.RANDOMNESS_SEED:
            raise RuntimeError("randomness check broke")
        return original(self, seed, *args, **kwargs)

    original = base.GateContext.benchmark_inputs
    monkeypatch.setattr(base.GateContext, "benchmark_inputs", broken)
    verdict = judge(tmp_path, DETERMINISTIC, WRONG_FOR_DETERMINISTIC)
    value_gates = [verdict.gates[g] for g in ("CMP-01", "CMP-02")]
    for result in value_gates:
        assert result.status is Status.ERROR, result
        assert "randomness check broke" in result.detail
