"""`kdiff run` end to end on the KernelBench fixture checkout, exit statuses, bad input, and
a third-party adapter found through its entry point. Plumbing only: one cheap gate."""
from __future__ import annotations

import dataclasses
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kdiff.commands.cli import main
from kdiff.commands.run import judge_all
from kdiff.data.model import Verdict
from kdiff.judging import plugins
from kdiff.judging.runconfig import RunConfig

FIXTURES = Path(__file__).parent / "fixtures"
CHECKOUT = FIXTURES / "kernelbench_checkout"
RUN_A = CHECKOUT / "runs" / "run_a"
PLUMBING = ["--gates", "ORD-02", "--device", "cpu"]


@pytest.fixture(autouse=True)
def private_cwd(tmp_path, monkeypatch):
    """A run without a report path keeps its results store in ./kdiff-out: never reuse one."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture(scope="module")
def run_a(tmp_path_factory):
    """One run over level 1 of run_a, in two judge processes, with every report."""
    out = tmp_path_factory.mktemp("run_a")
    code = main(["run", "--bench", "kernelbench", "--root", str(CHECKOUT), "--runs", str(RUN_A),
                 "--level", "1", "--jobs", "2", *PLUMBING, "--json", str(out / "r.json"),
                 "--markdown", str(out / "r.md"), "--junit", str(out / "r.xml")])
    return code, out, json.loads((out / "r.json").read_text())


def test_run_judges_and_reports_recorded_beside_rerun_verdicts(run_a):
    code, _, data = run_a
    assert (data["bench"], data["native"], data["device"]) == ("kernelbench", "kernelbench",
                                                               "cpu")
    kernels = {k["id"].split("/")[1]: k for k in data["kernels"]}
    assert list(kernels) == [f"level_1_problem_1_sample_{s}" for s in range(4)] + [
        "level_1_problem_2_sample_0", "level_1_problem_9_sample_0"]  # case order kept
    honest, inplace, syntax, wrong = (kernels[f"level_1_problem_1_sample_{s}"] for s in range(4))
    assert (honest["recorded_accept"], honest["native_accept"], honest["verifier_accept"]) == (
        True, True, True)
    # The harness recorded the in-place kernel as correct; so does the re-run native check;
    # the verifier rejects it for aliasing its input.
    assert (inplace["recorded_accept"], inplace["native_accept"],
            inplace["verifier_accept"]) == (True, True, False)
    assert inplace["gates"]["ORD-02"]["status"] == "fail"
    assert inplace["metadata"]["kdiff-redteam"] == "doubles in place"
    # Recorded and re-run agree that x*3 is wrong; ORD-02 alone has nothing against it.
    assert (wrong["recorded_accept"], wrong["native_accept"], wrong["verifier_accept"]) == (
        False, False, True)
    assert wrong["native"]["reason"]
    # Bad input: each its own error row, the run went on.
    assert syntax["status"] == "error" and "syntax error" in syntax["error"]
    assert syntax["native_accept"] is False  # a kernel that does not import is not accepted
    assert kernels["level_1_problem_2_sample_0"]["status"] == "error"
    assert "does not import" in kernels["level_1_problem_2_sample_0"]["error"]
    assert "no problem 9" in kernels["level_1_problem_9_sample_0"]["error"]
    assert data["confusion"] == {"both_accept": 1, "native_only": 1, "verifier_only": 1,
                                 "both_reject": 1, "undecided": 2}
    assert code == 1  # --fail-on violation (default): the verifier rejected a kernel


def test_run_writes_markdown_and_junit(run_a):
    _, out, _ = run_a
    suite = ET.parse(out / "r.xml").getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("6", "1", "3")
    failed = [c for c in suite.iter("testcase") if c.find("failure") is not None]
    assert [c.get("name") for c in failed] == ["run_a/level_1_problem_1_sample_1"]
    assert failed[0].find("failure").get("message").startswith("ORD-02=")
    md = (out / "r.md").read_text()
    assert "### Native check against verifier" in md and "| run_a/level_1_problem_1_sample_1 |" in md


def test_exit_statuses_follow_fail_on(run_a, tmp_path, capsys):
    from kdiff.commands.cli import exit_status
    _, _, data = run_a
    verdicts = [Verdict.from_json(k) for k in data["kernels"]]
    assert exit_status(verdicts, "violation") == 1
    assert exit_status(verdicts, "disagreement") == 1
    assert exit_status(verdicts, "never") == 0
    # End to end on error rows only (no worker starts): nothing rejected, nothing disagrees,
    # but both are undecided, which fails --fail-on violation unless the user opts out.
    only_errors = ["run", "--bench", "kernelbench", "--root", str(CHECKOUT), "--runs",
                   str(RUN_A), "--problems", "2,9", *PLUMBING]
    assert main(only_errors) == 1
    out, err = capsys.readouterr()
    assert "undecided (n/a), 2 kernel(s), counted as violations unless --undecided-ok:\n" \
        "  run_a/level_1_problem_2_sample_0: " in out
    assert "  run_a/level_1_problem_9_sample_0: level_1_problem_9_sample_0_kernel.py: no " \
        "problem 9 in level 1 of the checkout" in out
    assert main([*only_errors, "--undecided-ok"]) == 0
    assert main([*only_errors, "--fail-on", "disagreement"]) == 0
    err = capsys.readouterr().err
    assert "[1/2  50%]" in err and "[2/2 100%]" in err  # the progress line


def test_model_named_run_judges_the_model_class(tmp_path):
    out = tmp_path / "r.json"
    code = main(["run", "--bench", "kernelbench", "--root", str(CHECKOUT), "--runs",
                 str(CHECKOUT / "runs" / "run_c_filtered"), *PLUMBING, "--json", str(out)])
    (kernel,) = json.loads(out.read_text())["kernels"]
    assert kernel["error"] is None, kernel
    assert (kernel["native_accept"], kernel["verifier_accept"], code) == (True, True, 0)


@pytest.mark.parametrize("argv, message", [
    (["--root", "/nonexistent/kb"], "--root /nonexistent/kb: no such file or directory"),
    (["--root", str(CHECKOUT), "--runs", "/nonexistent/run"], "--runs /nonexistent/run"),
    (["--root", str(FIXTURES / "thirdparty_adapter")], "no KernelBench problems"),
    (["--root", str(CHECKOUT), "--problems", "nothing*"], "no kernelbench cases match"),
    (["--native", "nope"], "unknown native preset 'nope'"),
    (["--gates", "XYZ-9"], "unknown gate(s) XYZ-9"),
    (["--jobs", "0"], "argument --jobs: must be at least 1"),
])
def test_bad_usage_is_exit_2_with_one_line(argv, message, capsys):
    assert main(["run", "--bench", "kernelbench", "--device", "cpu", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


def test_unknown_bench_lists_the_installed_ones(capsys):
    assert main(["run", "--bench", "nosuchbench"]) == 2
    err = capsys.readouterr().err
    assert "unknown bench 'nosuchbench'" in err and "kernelbench" in err and "tritonbench" in err


@pytest.fixture
def fresh_manager():
    plugins.manager.cache_clear()
    yield
    plugins.manager.cache_clear()


def test_third_party_adapter_through_its_entry_point(monkeypatch, fresh_manager, tmp_path,
                                                     capsys):
    assert main(["run", "--bench", "toybench"]) == 2  # not installed yet
    assert "toybench" not in capsys.readouterr().err.split("installed adapters:")[1]
    # "Install" it: a distribution with a `kdiff.adapters` entry point appears on sys.path.
    monkeypatch.syspath_prepend(str(FIXTURES / "thirdparty_adapter"))
    plugins.manager.cache_clear()
    out = tmp_path / "r.json"
    code = main(["run", "--bench", "toybench", *PLUMBING, "--json", str(out)])
    data = json.loads(out.read_text())
    assert (data["bench"], data["native"]) == ("toybench", "toy-exact")
    (kernel,) = data["kernels"]
    assert kernel["id"] == "toy/double" and kernel["native"]["preset"] == "toy-exact"
    assert (kernel["native_accept"], kernel["verifier_accept"], code) == (True, True, 0)
    assert main(["run", "--bench", "nosuchbench"]) == 2
    assert "toybench" in capsys.readouterr().err


def test_judge_all_is_a_plain_generator_over_cases():
    config = RunConfig(root=CHECKOUT, runs=RUN_A, problems=["9"])
    pm = plugins.manager()
    cases = pm.hook.kdiff_discover(bench="kernelbench", config=config)
    verdicts = list(judge_all(iter(cases), config, pm, "kernelbench"))
    assert [v.case.id for v in verdicts] == ["run_a/level_1_problem_9_sample_0"]
    assert verdicts[0].error and verdicts[0].verifier_accept is None


def test_a_case_that_ran_out_of_device_memory_beside_others_is_judged_again_alone(monkeypatch):
    """With several judges, a verdict whose candidate or oracle ran out of device memory is
    held back and the case judged again by one judge after the rest; its first verdict never
    reaches the report. One judge alone keeps whatever it got."""
    from kdiff.commands import run as run_module
    from kdiff.data.model import Case, GateResult, NativeVerdict, Status

    def verdict(case, detail, status=Status.FAIL, signature="raised"):
        return Verdict(case, NativeVerdict(True, "kernelbench"),
                       {"EXC-01": GateResult("EXC-01", status, signature, detail)})

    crowded, roomy, kdiff_oom, native_oom = (
        Case(name, Path("p.py"), Path("c.py"))
        for name in ("crowded", "roomy", "kdiff_oom", "native_oom"))
    first = {"crowded": verdict(crowded, "AcceleratorError: CUDA error: out of memory"),
             "roomy": verdict(roomy, "AcceleratorError: CUDA error: an illegal memory access"),
             "kdiff_oom": verdict(kdiff_oom, "kdiff error: OutOfMemoryError: CUDA out of "
                                  "memory. Tried to allocate 132.00 MiB", Status.ERROR, None),
             "native_oom": Verdict(native_oom, NativeVerdict(
                 False, "kernelbench", reason="raised: AcceleratorError: CUDA error: out of "
                 "memory"), {})}

    class SharedGpu:  # the first pass, judges side by side
        def judge(self, cases, judge, config, pm, preset):
            return iter([first[c.id] for c in cases])

    alone = []

    def judge_alone(case, config, pm, preset):
        alone.append((case.id, config.jobs))
        return verdict(case, "", Status.PASS, None)

    monkeypatch.setattr(run_module, "judge_one", judge_alone)
    config = RunConfig(jobs=12)
    got = {v.case.id: v for v in judge_all([crowded, roomy, kdiff_oom, native_oom], config,
                                          None, "kernelbench", SharedGpu())}
    assert alone == [("crowded", 1), ("kdiff_oom", 1), ("native_oom", 1)]
    assert got["native_oom"].native.accept
    assert got["crowded"].verifier_accept and got["kdiff_oom"].verifier_accept
    assert got["roomy"].failed_gates == ["EXC-01"]  # an illegal access is the candidate's
    alone.clear()
    single = {v.case.id: v for v in judge_all([crowded], dataclasses.replace(config, jobs=1),
                                             None, "kernelbench", SharedGpu())}
    assert alone == [] and single["crowded"].failed_gates == ["EXC-01"]
