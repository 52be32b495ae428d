"""The SOL-ExecBench adapter on fixtures written for kdiff in its layout
(tests/fixtures/solexecbench/rms_scale: y = x / rms(x) * scale, a var axis `batch`, a const
axis `hidden` = 128 and an expr axis; three workloads, the last with its own tolerance).

Solutions: pytorch (return value) and dps (destination passing), both correct; last_column
leaves one of 128 columns zero, 0.78% of the elements, which the matched-ratio rule (0.99)
accepts and CMP-03 rejects; zeros, which the all-zero rule rejects; cuda, a compiled language
kdiff does not build (a case with its reason).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from kdiff.adapters.solexecbench import runtime
from kdiff.adapters.solexecbench.layout import (
    Definition,
    TensorSpec,
    Tolerance,
    Workload,
    read_definition,
)
from kdiff.adapters.solexecbench.native import compare
from kdiff.commands.cli import main
from kdiff.data.problem import load_problem
from kdiff.judging.context import GateContext
from kdiff.judging.plugins import manager
from kdiff.judging.runconfig import RunConfig
from kdiff.sandbox.process import CandidateProcess
from kdiff.verdicts.judge import judge_case

FIXTURES = Path(__file__).parent / "fixtures" / "solexecbench"
RMS = FIXTURES / "rms_scale"
BENCH = "solexecbench"


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KDIFF_CACHE", str(tmp_path_factory.mktemp("kdiff-cache")))
        yield


@pytest.fixture(scope="module")
def cases():
    config = RunConfig(bench=BENCH, root=FIXTURES)
    return {c.id: c for c in manager().hook.kdiff_discover(bench=BENCH, config=config)}


def native_only(case):
    with CandidateProcess(case.problem, case.candidate, "cpu") as candidate:
        ctx = GateContext(load_problem(case.problem), candidate)
        return manager().hook.kdiff_native_check(bench=BENCH, case=case, ctx=ctx,
                                                 preset="solexecbench")


def test_discovery(cases):
    assert sorted(cases) == [f"rms_scale/solution_{n}" for n in
                             ("cuda", "dps", "last_column", "pytorch", "zeros")]
    assert "compile server" in cases["rms_scale/solution_cuda"].discovery_error
    assert cases["rms_scale/solution_dps"].metadata["destination_passing_style"] is True


def test_problem_sizes_are_the_var_axes(cases):
    problem = load_problem(cases["rms_scale/solution_pytorch"].problem)
    assert problem.size_constants() == {"batch": 4}  # `hidden` is const: the contract's
    assert list(problem.variants().values()) == [{"WORKLOAD": 1}, {"WORKLOAD": 2}]
    problem.set_sizes({"WORKLOAD": 0, "batch": 9})
    x, scale = problem.get_inputs()
    assert x.shape == (9, 128) and scale.shape == (128,)  # the expr axis resolved
    problem.set_sizes({"WORKLOAD": 2})
    assert problem.get_inputs()[0].shape == (16, 128)


def test_comparison_rules():
    ref = torch.linspace(1, 2, 100)
    tol = Tolerance()
    assert not compare(ref.clone(), ref, tol).exceeds
    one_off, two_off = ref.clone(), ref.clone()
    one_off[0] += 1
    two_off[:2] += 1
    assert not compare(one_off, ref, tol).exceeds  # matched ratio 0.99: passes
    assert compare(two_off, ref, tol).exceeds  # 0.98
    assert compare(one_off, ref, Tolerance(max_error_cap=0.5)).exceeds
    assert "all zeros" in compare(torch.zeros(100), ref, tol).reason
    nan = ref.clone()
    nan[3] = float("nan")
    assert compare(nan, nan, tol).exceeds  # NaN fails even where the reference has it
    neg = ref.clone()
    neg[3] = float("-inf")
    assert compare(neg, neg, tol).exceeds
    assert not compare(neg, neg, Tolerance(allow_negative_inf=True)).exceeds
    assert compare(neg, ref, Tolerance(allow_negative_inf=True)).exceeds


def test_inputs_by_name_and_custom():
    spec = lambda n, s, d="float32": TensorSpec(n, s, d)  # noqa: E731
    definition = Definition(
        "t", {"n": {"type": "var"}, "h": {"type": "const", "value": 8}},
        [spec("norm_weight", ("h",)), spec("up_proj", ("h", "h")), spec("eps", None),
         spec("ids", ("n",), "int32")],
        [spec("out", ("n", "h"))], "def run(*a): pass")
    workload = Workload({"n": 5}, {"eps": {"type": "scalar", "value": 1e-5}}, "u")
    torch.manual_seed(0)
    weight, proj, eps, ids = runtime.make_inputs(definition, workload, "cpu", None)
    assert torch.equal(weight, torch.ones(8)) and eps == 1e-5
    assert ids.dtype == torch.int32 and ids.shape == (5,) and int(ids.abs().max()) < 1024
    assert float(proj.std()) < 0.6  # normal / sqrt(fan_in = 8)
    assert [t.shape for t in runtime.allocate_outputs(definition, [weight, proj, eps, ids])] \
        == [(5, 8)]

    custom = Definition(definition.name, definition.axes, definition.inputs[:1],
                        definition.outputs, "", "make")
    seen = {}

    def make(axes_and_scalars, device):
        seen.update(axes_and_scalars)
        return {"norm_weight": torch.full((8,), 3.0)}
    made = runtime.make_inputs(custom, Workload({"n": 5}, {"norm_weight": {"type": "custom"}},
                                                "u"), "cpu", make)
    assert seen == {"n": 5, "h": 8} and float(made[0][0]) == 3.0


def test_native_check_and_gate(cases):
    assert native_only(cases["rms_scale/solution_dps"]).accept is True
    zeros = native_only(cases["rms_scale/solution_zeros"])
    assert zeros.accept is False and "all zeros" in zeros.reason
    config = RunConfig(bench=BENCH, gates=["CMP-03"])
    verdict = judge_case(cases["rms_scale/solution_last_column"], config, manager())
    assert verdict.native.accept is True, verdict.native.reason  # 0.78% under the 1% allowed
    assert verdict.native.reason == "3 workload(s) x 10 rounds within tolerance"
    assert verdict.gates["CMP-03"].signature == "exceeds_bound"


def test_definition_errors_are_one_line(tmp_path):
    bad = json.loads((RMS / "definition.json").read_text())
    bad["inputs"]["x"]["shape"] = ["batch", "depth"]
    (tmp_path / "definition.json").write_text(json.dumps(bad))
    with pytest.raises(Exception, match="undefined axes"):
        read_definition(tmp_path / "definition.json")


def test_verify_takes_a_bench(tmp_path, capsys):
    out = tmp_path / "verdict.json"
    status = main(["verify", "--bench", BENCH, "--problem", str(RMS),
                   "--candidate", str(RMS / "solution_pytorch.json"), "--gates", "CMP-03",
                   "--device", "cpu", "--json", str(out)])
    assert status == 0
    [kernel] = json.loads(out.read_text())["kernels"]
    assert kernel["native_accept"] is True and kernel["verifier_accept"] is True
    assert "native check solexecbench (SOL-ExecBench: seed 200" in capsys.readouterr().err


def test_a_solution_wrong_only_on_the_harness_rounds_fails_cmp01_on_those_answers(cases):
    """It draws the harness's rounds itself (seed 200, the workloads in order) and is wrong on
    those alone: the native check rejected it and every gate accepted it. CMP-01 judges the
    answers the native check was given."""
    hostile = Path(__file__).parent / "hostile" / "solexecbench_wrong_on_the_harness_rounds.json"
    case = manager().hook.kdiff_case_from_paths(bench=BENCH, problem=RMS, candidate=hostile)
    verdict = judge_case(case, RunConfig(bench=BENCH, gates=["CMP-01"]), manager())
    assert verdict.native.accept is False and verdict.native.failed_trial == 0
    assert verdict.gates["CMP-01"].signature == "distribution_dependent", verdict.gates
    assert verdict.gates["CMP-01"].detail.startswith("the native check's trial 0")
    correct = judge_case(cases["rms_scale/solution_pytorch"],
                         RunConfig(bench=BENCH, gates=["CMP-01"]), manager())
    assert correct.verifier_accept is True, correct.gates


def test_the_rounds_after_the_first_are_drawn_from_the_harness_stream(cases):
    """Upstream draws every round from the one stream seed 200 began; building the candidate at
    round 0's call seeded torch with 42, so kdiff's later rounds were other draws, and a
    solution wrong on upstream's later rounds alone was accepted."""
    hostile = Path(__file__).parent / "hostile" / "solexecbench_wrong_after_the_first_round.json"
    case = manager().hook.kdiff_case_from_paths(bench=BENCH, problem=RMS, candidate=hostile)
    verdict = native_only(case)
    assert verdict.accept is False and verdict.failed_trial == 1, verdict.reason


@pytest.mark.parametrize("name, reason", [
    ("solexecbench_fewer_outputs_after_round_0", "runtime error: 0 outputs, 1 defined"),
    ("solexecbench_other_shape_after_round_0", "runtime error: y of shape (3, 128) does not "
                                               "broadcast with the reference's (4, 128)"),
])
def test_outputs_are_counted_and_compared_in_every_round(name, reason):
    """Upstream collects every round's outputs by name (too few raises) and compares later
    rounds' outputs broadcast (a shape that does not broadcast raises): both fail its run.
    kdiff counted them in round 0 alone (the first was accepted) and its comparison raised
    out of the native check on the second (no verdict)."""
    hostile = Path(__file__).parent / "hostile" / f"{name}.json"
    case = manager().hook.kdiff_case_from_paths(bench=BENCH, problem=RMS, candidate=hostile)
    verdict = native_only(case)
    assert verdict.accept is False and verdict.failed_trial == 1
    assert verdict.reason == f"workload 0 (rms-4), round 1: {reason}"
