"""The GPU MODE adapter on fixtures written for kdiff in reference-kernels' layout
(tests/fixtures/gpumode/problems): discovery of the labelled solutions, the materialised
problem (sizes, the task.yml tests as CMP-03 variants), kernelbot's test-mode check, and
`kdiff verify --bench gpumode`.

toy/scale_py is out = 2 relu(x) into an output buffer, tests at sizes 32, 48, 64. Its
solutions: correct/torch_relu; wrong/nan_swallowed (native accepts, EXC-01 rejects);
wrong/block_tail (drops the rows past a multiple of 16: native accepts, CMP-03 rejects at a
held-out size); wrong/second_test_size (wrong at 48 alone: native rejects at test 1, CMP-03
at the variant of test 1); wrong/untouched_buffer (returns the output
buffer as it came). graphed/scale_py is the same problem under a harness that calls the
submission twice (a warm-up, then the CUDA-graph capture): wrong/first_call_per_shape is right on
its first call at each shape only.
"""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import torch

from kdiff.adapters.gpumode import data
from kdiff.commands.cli import main
from kdiff.data.model import Status
from kdiff.data.problem import load_problem
from kdiff.judging.context import GateContext
from kdiff.judging.plugins import manager
from kdiff.judging.runconfig import RunConfig
from kdiff.sandbox.process import CandidateProcess
from kdiff.verdicts.judge import judge_case

FIXTURES = Path(__file__).parent / "fixtures" / "gpumode"
TOY = FIXTURES / "problems" / "toy" / "scale_py"
GRAPHED = FIXTURES / "problems" / "graphed" / "scale_py"
BENCH = "gpumode"


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KDIFF_CACHE", str(tmp_path_factory.mktemp("kdiff-cache")))
        yield


@pytest.fixture(scope="module")
def cases():
    config = RunConfig(bench=BENCH, root=FIXTURES)
    return {c.id: c for c in manager().hook.kdiff_discover(bench=BENCH, config=config)}


def judge(case, gates):
    config = RunConfig(bench=BENCH, gates=gates)
    return judge_case(case, config, manager())


def native_only(case):
    pm = manager()
    with CandidateProcess(case.problem, case.candidate, "cpu") as candidate:
        ctx = GateContext(load_problem(case.problem), candidate)
        return pm.hook.kdiff_native_check(bench=BENCH, case=case, ctx=ctx, preset="gpumode")


def test_discovery_labels_every_shipped_solution(cases):
    labels = {cid: c.metadata.get("label") for cid, c in cases.items()}
    assert labels == {
        "toy/scale_py/correct/torch_relu": "correct",
        "toy/scale_py/wrong/nan_swallowed": "wrong",
        "toy/scale_py/wrong/block_tail": "wrong",
        "toy/scale_py/wrong/second_test_size": "wrong",
        "toy/scale_py/wrong/untouched_buffer": "wrong",
        "graphed/scale_py/wrong/first_call_per_shape": "wrong",
        "toy/broken_py": None,  # a problem that cannot be read is a case of its own
    }
    assert "utils.py" in cases["toy/broken_py"].discovery_error
    assert cases["graphed/scale_py/wrong/first_call_per_shape"].metadata["graph_capture"] is True
    assert cases["toy/scale_py/correct/torch_relu"].metadata["graph_capture"] is False
    only = manager().hook.kdiff_discover(
        bench=BENCH, config=RunConfig(bench=BENCH, root=FIXTURES, problems=["graphed/*"]))
    assert [c.id for c in only] == ["graphed/scale_py/wrong/first_call_per_shape"]


def test_problem_sizes_and_tests_as_variants(cases):
    problem = load_problem(cases["toy/scale_py/correct/torch_relu"].problem)
    # The first test's sizes are what CMP-03 scales; the other tests are its variants.
    assert problem.size_constants() == {"size": 32}
    assert list(problem.variants().values()) == [{"TEST": 1}, {"TEST": 2}]
    torch.manual_seed(0)
    first = problem.get_inputs()
    torch.manual_seed(1)
    second = problem.get_inputs()
    assert first[0] == '["tuple", [0, 1]]' and first[1].shape == (32, 32)
    assert not torch.equal(first[1], second[1])  # a fresh seed per kdiff seed
    problem.set_sizes({"TEST": 2})
    assert problem.get_inputs()[1].shape == (64, 64)
    problem.set_sizes({"TEST": 0, "size": 17})
    x = problem.get_inputs()
    assert torch.equal(problem.Model()(*x), torch.relu(x[1]) * 2)


def test_sibling_modules_are_per_problem(tmp_path):
    """Two problems' `utils` modules never mix, and neither stays in sys.modules."""
    for name, value in (("a", 1), ("b", 2)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "utils.py").write_text(f"VALUE = {value}\n")
        (tmp_path / name / "reference.py").write_text("from utils import VALUE\n")
    a = data.load_with_siblings(tmp_path / "a" / "reference.py", tmp_path / "a", "reference")
    b = data.load_with_siblings(tmp_path / "b" / "reference.py", tmp_path / "b", "reference")
    assert (a.VALUE, b.VALUE) == (1, 2)
    assert "utils" not in sys.modules or not hasattr(sys.modules["utils"], "VALUE")


def test_structure_round_trip():
    x = torch.ones(2)
    structure, leaves = data.flatten({"a": (x, 3), "b": [x, None]})
    rebuilt = data.unflatten(structure, leaves)
    assert rebuilt == {"a": (x, 3), "b": [x, None]}


def test_native_and_gates_three_states(cases):
    correct = judge(cases["toy/scale_py/correct/torch_relu"], ["EXC-01", "CMP-03"])
    assert correct.native.accept is True and correct.verifier_accept is True, correct.gates
    assert correct.native.reason == "3/3 tests pass check_implementation"

    swallowed = judge(cases["toy/scale_py/wrong/nan_swallowed"], ["EXC-01"])
    assert swallowed.native.accept is True
    assert swallowed.gates["EXC-01"].signature == "nan_swallowed"

    tail = judge(cases["toy/scale_py/wrong/block_tail"], ["CMP-03"])
    assert tail.native.accept is True
    assert tail.gates["CMP-03"].status is Status.FAIL
    assert tail.gates["CMP-03"].signature == "shape_specialised"

    second = judge(cases["toy/scale_py/wrong/second_test_size"], ["CMP-03"])
    assert second.native.accept is False and second.native.failed_trial == 1
    assert second.native.reason.startswith("test 1 (size: 48; seed: 12)")
    # Only the benchmark's own test at size 48 shows it: a held-out variant of CMP-03.
    assert second.gates["CMP-03"].signature == "variant_specialised", second.gates


def test_the_submission_owns_its_data(cases):
    """The harness calls custom_kernel on a clone of data: the correct solution writes the
    output buffer it is given and returns it, which is neither an input changed (RES-01) nor
    an output aliasing an input (ORD-02)."""
    correct = judge(cases["toy/scale_py/correct/torch_relu"], ["ORD-02", "RES-01"])
    assert correct.verifier_accept is True, correct.gates


def test_an_untouched_output_buffer_is_rejected(cases):
    """The reference writes its answer into the output buffer among its inputs; it runs on
    copies, so the candidate that returns the buffer untouched returns no answer."""
    verdict = judge(cases["toy/scale_py/wrong/untouched_buffer"], ["CMP-03"])
    assert verdict.native.accept is False
    assert verdict.gates["CMP-03"].status is Status.FAIL


def test_graph_capturing_harness_calls_twice(cases):
    graphed = cases["graphed/scale_py/wrong/first_call_per_shape"]
    assert native_only(graphed).accept is False
    # The same submission under a harness that calls it once is accepted.
    once = manager().hook.kdiff_case_from_paths(
        bench=BENCH, problem=TOY, candidate=Path(graphed.metadata["submission"]))
    assert once.metadata["graph_capture"] is False
    assert native_only(once).accept is True


def test_verify_takes_a_bench(tmp_path, capsys):
    out = tmp_path / "verdict.json"
    status = main(["verify", "--bench", BENCH, "--problem", str(TOY),
                   "--candidate", str(TOY / "solutions" / "wrong" / "nan_swallowed.py"),
                   "--gates", "EXC-01", "--device", "cpu", "--json", str(out)])
    assert status == 1  # the verifier rejects it
    report = json.loads(out.read_text())
    assert report["bench"] == BENCH and report["native"] == "gpumode"
    [kernel] = report["kernels"]
    assert kernel["native_accept"] is True and kernel["verifier_accept"] is False
    assert kernel["metadata"]["label"] == "wrong"
    assert "native check gpumode (GPU MODE test mode" in capsys.readouterr().err


def test_a_submission_wrong_only_on_the_harness_tests_fails_cmp01_on_those_answers(cases):
    """It draws task.yml's tests itself (their seeds are public) and is wrong on those alone:
    the native check rejected it and every gate accepted it. CMP-01 judges the answers the
    native check was given."""
    hostile = Path(__file__).parent / "hostile" / "gpumode_wrong_on_the_harness_tests.py"
    case = manager().hook.kdiff_case_from_paths(bench=BENCH, problem=TOY, candidate=hostile)
    verdict = judge(case, ["CMP-01"])
    assert verdict.native.accept is False and verdict.native.failed_trial == 0
    assert verdict.gates["CMP-01"].signature == "distribution_dependent", verdict.gates
    assert verdict.gates["CMP-01"].detail.startswith("the native check's trial 0")
    correct = judge(cases["toy/scale_py/correct/torch_relu"], ["CMP-01"])
    assert correct.verifier_accept is True, correct.gates


def test_tests_after_the_first_draw_from_the_harness_stream(tmp_path):
    """A generate_input that draws from torch's global generator continues the stream the
    harness's seed 42 began; building the candidate at test 0's call set it back to seed 42,
    so kdiff's test 1 was another draw, and a submission wrong on upstream's alone passed."""
    problem = tmp_path / "toy" / "global_py"
    shutil.copytree(TOY.parent, tmp_path / "toy", ignore=shutil.ignore_patterns("solutions"))
    shutil.copytree(TOY, problem, ignore=shutil.ignore_patterns("solutions"))
    reference = problem / "reference.py"
    reference.write_text(reference.read_text().replace(
        "gen = torch.Generator().manual_seed(seed)\n    x = torch.randn(size, size, generator=gen)",
        "x = torch.randn(size, size)  # the global stream"))
    submission = tmp_path / "wrong_on_upstreams_test_1.py"
    submission.write_text(
        "import torch\n"
        "torch.manual_seed(42)  # upstream's draws: test 0's, then test 1's\n"
        "TEST_1 = [torch.randn(s, s) for s in (32, 48)][1]\n"
        "def custom_kernel(data):\n"
        "    x, out = data\n"
        "    wrong = x.shape == TEST_1.shape and torch.equal(x, TEST_1)\n"
        "    out[...] = torch.relu(x) * (3 if wrong else 2)\n"
        "    return out\n")
    case = manager().hook.kdiff_case_from_paths(bench=BENCH, problem=problem,
                                               candidate=submission)
    verdict = native_only(case)
    assert verdict.accept is False and verdict.failed_trial == 1, verdict.reason
