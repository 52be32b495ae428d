"""The command line: listing, verdict exit statuses, JSON contract, and bad input."""
import json
from pathlib import Path

import pytest

from kdiff.commands.cli import main

CORE = Path(__file__).parent / "fixtures" / "core"
PROBLEM = CORE / "scale_sum.py"


def test_gates_json_lists_twelve_with_classes(capsys):
    assert main(["gates", "--json"]) == 0
    gates = json.loads(capsys.readouterr().out)
    assert len(gates) == 12 and len({g["id"] for g in gates}) == 12
    assert {g["class"] for g in gates} == {"tolerance-free", "thresholded"}


def test_verify_accepts_an_honest_reordering(tmp_path, capsys):
    out = tmp_path / "v.json"
    code = main(["verify", "--problem", str(PROBLEM), "--candidate",
                 str(CORE / "scale_sum_honest.py"), "--gates", "PRC-01,ORD-02",
                 "--device", "cpu", "--json", str(out), "-v"])
    data = json.loads(out.read_text())
    assert code == 0, data
    printed = capsys.readouterr()
    # -v explains every gate, passes too
    assert "  ORD-02 pass\n      5 runs bitwise identical" in printed.out
    assert "  PRC-01 pass\n" in printed.out
    assert printed.err.startswith("kdiff verify: native check kernelbench-v0.1 (KernelBench "
                                  "v0/v0.1: 5 trials from seed 42, allclose atol=rtol=1e-2)")
    kernel = data["kernels"][0]
    assert kernel["native_accept"] is True and kernel["verifier_accept"] is True
    assert set(kernel["gates"]) == {"PRC-01", "ORD-02"}
    assert data["confusion"] == {"both_accept": 1, "native_only": 0, "verifier_only": 0,
                                 "both_reject": 0, "undecided": 0}


def test_verify_rejects_fp16_arithmetic_that_the_benchmark_accepts(tmp_path, capsys):
    out = tmp_path / "v.json"
    code = main(["verify", "--problem", str(PROBLEM), "--candidate",
                 str(CORE / "scale_sum_fp16.py"), "--gates", "PRC-01", "--device", "cpu",
                 "--native", "kernelbench-v0.1", "--json", str(out)])
    kernel = json.loads(out.read_text())["kernels"][0]
    assert code == 1
    # The failure in full beneath the table (which cuts it): which inputs, which elements,
    # the worst one's expected and got values against its bound, the signature's meaning.
    explained = capsys.readouterr().out.split("\n\nscale_sum::scale_sum_fp16:\n")[1]
    assert explained.startswith("  PRC-01 FAIL below_working_precision (an error larger than")
    flat = " ".join(explained.split())
    assert "benchmark inputs seed 0 [float32]: output 0: 3/4 elements exceed the bound" in flat
    assert "expected" in flat and "got" in flat and "bound" in flat and "..." not in flat
    assert kernel["native_accept"] is True
    assert kernel["gates"]["PRC-01"]["status"] == "fail"
    assert kernel["gates"]["PRC-01"]["signature"] == "below_working_precision"


def test_candidate_that_exits_is_a_failed_gate_not_a_crashed_kdiff(tmp_path):
    out = tmp_path / "v.json"
    code = main(["verify", "--problem", str(PROBLEM), "--candidate", str(CORE / "exits.py"),
                 "--gates", "PRC-01", "--device", "cpu", "--json", str(out)])
    kernel = json.loads(out.read_text())["kernels"][0]
    assert code == 1
    assert kernel["native_accept"] is False
    assert kernel["gates"]["PRC-01"]["signature"] == "crash"
    assert "exited with status 7" in kernel["gates"]["PRC-01"]["detail"]


def test_broken_files_are_one_line_errors_with_exit_2(capsys):
    missing = CORE / "missing.py"
    for problem, candidate, cause in ((PROBLEM, missing, "candidate file not found"),
                                      (missing, PROBLEM, "problem file not found")):
        code = main(["verify", "--problem", str(problem), "--candidate", str(candidate),
                     "--gates", "PRC-01", "--device", "cpu"])
        err = capsys.readouterr().err.strip()
        assert code == 2
        assert len(err.splitlines()) == 1
        assert missing.name in err and cause in err


def test_a_candidate_that_does_not_import_is_rejected_with_a_report(tmp_path):
    """Its failure, not bad usage: exit 1 and a report that says why."""
    for candidate, cause in ((CORE / "syntax_error.py", "syntax error"),
                             (CORE / "raises_on_import.py", "does not import: ImportError")):
        out = tmp_path / f"{candidate.stem}.json"
        code = main(["verify", "--problem", str(PROBLEM), "--candidate", str(candidate),
                     "--gates", "PRC-01", "--device", "cpu", "--json", str(out)])
        kernel = json.loads(out.read_text())["kernels"][0]
        assert code == 1
        assert kernel["verifier_accept"] is False and kernel["error_kind"] == "candidate"
        assert cause in kernel["error"]


def test_unknown_gate_and_preset_are_usage_errors(capsys):
    args = ["verify", "--problem", str(PROBLEM), "--candidate", str(CORE / "scale_sum_honest.py")]
    assert main([*args, "--gates", "XYZ-9"]) == 2
    assert "unknown gate" in capsys.readouterr().err
    assert main([*args, "--native", "nope"]) == 2
    assert "unknown native preset" in capsys.readouterr().err


def test_verify_names_the_gate_in_work_while_it_takes_long(monkeypatch, capsys):
    """A gate that takes minutes on a device: a heartbeat line says which, and for how long,
    between the gates' own lines."""
    import time

    from kdiff.gates import registry
    from kdiff.reports import progress

    chosen = registry.select(["ORD-02", "PRC-01"])

    class Slow:
        id, name, klass = chosen[1].id, chosen[1].name, chosen[1].klass

        def run(self, ctx):
            time.sleep(0.6)
            return chosen[1].run(ctx)

    monkeypatch.setattr("kdiff.verdicts.judge.select", lambda ids: [chosen[0], Slow()])
    monkeypatch.setattr("kdiff.verdicts.judge.in_judging_order", lambda gates: gates)
    monkeypatch.setattr(progress, "HEARTBEAT_SECONDS", 0.2)
    assert main(["verify", "--problem", str(PROBLEM), "--candidate",
                 str(CORE / "scale_sum_honest.py"), "--device", "cpu",
                 "--gates", "ORD-02,PRC-01"]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("[")]
    gate_lines = [n for n, line in enumerate(lines) if line.endswith(" pass")]
    assert len(gate_lines) == 2
    between = lines[gate_lines[0] + 1:gate_lines[1]]
    assert between and all(line.startswith("[ 1/2") and f"judging {chosen[1].id}, " in line
                           for line in between), lines


@pytest.mark.parametrize("gate", ["CMP-01", "CMP-02", "CMP-03"])  # 02, 03: loops of their own
def test_a_gate_interrupted_between_its_trials_reports_what_they_showed(tmp_path, monkeypatch,
                                                                         gate):
    """Ctrl-C during the gate's third trial: the gate stays open (not run), and its detail
    keeps the two trials judged before, with their worst ratio."""
    from kdiff.gates.base import ThresholdedGate

    judge_trial, calls = ThresholdedGate.judge_trial, []

    def third_interrupts(self, ctx, trial, log):
        calls.append(trial.label)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return judge_trial(self, ctx, trial, log)

    monkeypatch.setattr(ThresholdedGate, "judge_trial", third_interrupts)
    out = tmp_path / "v.json"
    assert main(["verify", "--problem", str(PROBLEM), "--candidate",
                 str(CORE / "scale_sum_honest.py"), "--device", "cpu", "--json", str(out),
                 "--gates", gate]) == 3
    entry = json.loads(out.read_text())["kernels"][0]["gates"][gate]
    assert entry["status"] == "error"
    assert entry["detail"].startswith("not run: the judging was interrupted in it, after 2 "
                                      "trial(s) within bound; worst "), entry["detail"]


def test_an_interrupted_verify_reports_the_gates_judged_so_far(tmp_path, monkeypatch, capsys):
    """Ctrl-C (a device session's budget) during the third gate: the two judged are reported,
    the rest are open, and the exit status says unfinished."""
    from kdiff.gates import registry

    chosen = registry.select(["PRC-01", "ORD-02", "CMP-01", "EXC-01"])

    class Interrupting:
        id, name, klass = chosen[2].id, chosen[2].name, chosen[2].klass

        def run(self, ctx):
            raise KeyboardInterrupt

    monkeypatch.setattr("kdiff.verdicts.judge.select",
                        lambda ids: [chosen[0], chosen[1], Interrupting(), chosen[3]])
    # judged in the order given (JUDGING_ORDER is test_trial_sharing's to check)
    monkeypatch.setattr("kdiff.verdicts.judge.in_judging_order", lambda gates: gates)
    out = tmp_path / "v.json"
    code = main(["verify", "--problem", str(PROBLEM), "--candidate",
                 str(CORE / "scale_sum_honest.py"), "--device", "cpu", "--json", str(out),
                 "--gates", "PRC-01,ORD-02,CMP-01,EXC-01"])
    assert code == 3
    assert "interrupted after 2 of 4 gates" in capsys.readouterr().err
    kernel = json.loads(out.read_text())["kernels"][0]
    statuses = {g: r["status"] for g, r in kernel["gates"].items()}
    ids = [g.id for g in chosen]  # in the registry's order
    assert statuses == dict(zip(ids, ["pass", "pass", "error", "error"]))
    assert kernel["verifier_accept"] is None and kernel["native_accept"] is True


def test_verify_shows_each_gate_and_keeps_its_reports_current(tmp_path, monkeypatch, capsys):
    """One progress line per gate as it lands, and the JSON report rewritten after each: a
    verify killed outright keeps every gate but the one it was in (here the JSON is read while
    the third gate runs)."""
    from kdiff.gates import registry

    chosen = registry.select(["PRC-01", "ORD-02", "CMP-01"])
    out = tmp_path / "v.json"
    seen = {}

    class Peeking:  # the third gate: what is on disk while it runs
        id, name, klass = chosen[2].id, chosen[2].name, chosen[2].klass

        def run(self, ctx):
            seen.update(json.loads(out.read_text())["kernels"][0]["gates"])
            return chosen[2].run(ctx)

    monkeypatch.setattr("kdiff.verdicts.judge.select", lambda ids: [chosen[0], chosen[1], Peeking()])
    monkeypatch.setattr("kdiff.verdicts.judge.in_judging_order", lambda gates: gates)
    code = main(["verify", "--problem", str(PROBLEM), "--candidate",
                 str(CORE / "scale_sum_honest.py"), "--device", "cpu", "--json", str(out),
                 "--gates", "PRC-01,ORD-02,CMP-01"])
    assert code == 0
    ids = [g.id for g in chosen]
    assert {g: r["status"] for g, r in seen.items()} == dict(zip(ids, ["pass", "pass", "error"]))
    assert seen[ids[2]]["detail"] == "not run: not yet judged"
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("[")]
    assert [line.split("] ")[1] for line in lines] == [f"{g} pass" for g in ids]
    assert lines[0].startswith("[ 1/3") and lines[2].startswith("[ 3/3")
