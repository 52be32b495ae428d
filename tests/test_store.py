"""The results store: verdicts keyed by content and options, resume, and reports from the
store alone."""
import json
import sqlite3
from pathlib import Path

import pytest

from kdiff.commands.cli import main
from kdiff.data.model import Case, GateResult, NativeVerdict, Status, Verdict
from kdiff.judging.runconfig import RunConfig
from kdiff.verdicts.store import ResultsStore, judge_resuming

GATES = ["EXC-01", "ORD-02", "CMP-01"]


def _case(tmp_path: Path, name: str, body: str = "x") -> Case:
    problem = tmp_path / "problem.py"
    if not problem.exists():
        problem.write_text("# problem\n")
    candidate = tmp_path / f"{name}.py"
    candidate.write_text(f"# candidate {body}\n")
    return Case(id=name, problem=problem, candidate=candidate, metadata={"level": 1})


def _verdict(case: Case, gates: list[str], fail: str | None = None) -> Verdict:
    results = {g: GateResult(g, Status.FAIL if g == fail else Status.PASS,
                             "nan_swallowed" if g == fail else None, f"detail of {g}",
                             0.5 if g != fail else None, seconds=1.25) for g in gates}
    # judged at a scaled size, which a verdict read back from the store must still say
    return Verdict(case, NativeVerdict(True, "kernelbench", reason="5/5"), results,
                   scaled_sizes={"dim": (4096, 64)})


def _judge_all_fake(calls: list):
    """A judge_all that records what it was asked to judge and fails EXC-01 on 'bad'."""
    def judge_all(cases, config):
        cases = list(cases)  # a stream: one pass
        gates = config.gates or GATES
        calls.append(([c.id for c in cases], list(gates)))
        for c in cases:
            yield _verdict(c, gates, fail="EXC-01" if c.id == "bad" else None)
    return judge_all


def test_put_get_round_trip_keyed_by_content_and_options(tmp_path):
    config, case = RunConfig(), _case(tmp_path, "k")
    with ResultsStore(tmp_path / "s.sqlite") as store:
        assert store.get(case, config, "kernelbench", GATES) == (None, GATES)
        store.put(case, config, "kernelbench", _verdict(case, GATES, fail="ORD-02"))
        got, missing = store.get(case, config, "kernelbench", GATES)
        assert missing == [] and got.to_json() == _verdict(case, GATES, "ORD-02").to_json()
        # Another preset, other gate options or other candidate bytes: another verdict.
        assert store.get(case, config, "kernelbench-v0.1", GATES)[0] is None
        other = RunConfig()
        other.gate_options.seeds = 3
        assert store.get(case, other, "kernelbench", GATES)[0] is None
        case.candidate.write_text("# changed\n")
        assert store.get(case, config, "kernelbench", GATES)[0] is None


def test_a_problems_helpers_are_part_of_its_key(tmp_path, monkeypatch):
    """A verdict of a problem is not reused once a file it runs beside changes: a module
    in its folder that it names, or a kdiff module it imports."""
    import kdiff
    from kdiff.data import code
    helpers = tmp_path / "kdiff_helpers"
    helpers.mkdir()
    (helpers / "toy_helper.py").write_text("SCALE = 1.0\n")
    monkeypatch.setattr(kdiff, "__path__", [*kdiff.__path__, str(helpers)])
    config, case = RunConfig(), _case(tmp_path, "k")
    sibling = tmp_path / "shapes.py"
    sibling.write_text("N = 64\n")
    case.problem.write_text("import shapes\nfrom kdiff.toy_helper import SCALE\n")

    def stored_verdict_reused() -> bool:
        for cached in (code._origin, code._imports, code.closure):
            cached.cache_clear()
        with ResultsStore(tmp_path / "s.sqlite") as store:
            return store.get(case, config, "kernelbench", GATES)[0] is not None

    with ResultsStore(tmp_path / "s.sqlite") as store:
        store.put(case, config, "kernelbench", _verdict(case, GATES))
    assert stored_verdict_reused()
    sibling.write_text("N = 65\n")
    assert not stored_verdict_reused()
    with ResultsStore(tmp_path / "s.sqlite") as store:
        store.put(case, config, "kernelbench", _verdict(case, GATES))
    (helpers / "toy_helper.py").write_text("SCALE = 2.0\n")
    assert not stored_verdict_reused()


def test_a_file_that_names_nothing_is_keyed_by_its_bytes(tmp_path):
    """Stores written before helpers were part of the key still serve such files."""
    import hashlib

    from kdiff.data.code import source_digest
    plain = tmp_path / "problem.py"
    plain.write_text("import torch\nx = 1\n")
    broken = tmp_path / "broken.py"
    broken.write_text("def (:\n")  # a candidate that does not parse is keyed all the same
    for path in (plain, broken):
        assert source_digest(path) == hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_file_the_candidate_reads_by_name_is_part_of_its_key(tmp_path):
    """A candidate that runs `body.dat` (or builds `kernel.cu`) beside it is another kernel
    once that file changes; a file it does not name changes nothing."""
    from kdiff.data.code import source_digest
    candidate = tmp_path / "k.py"
    candidate.write_text("exec(open(__file__.replace('k.py', 'body.dat')).read())\n")
    body, other = tmp_path / "body.dat", tmp_path / "notes.txt"
    body.write_text("class ModelNew: pass\n")
    other.write_text("a")
    before = source_digest(candidate)
    other.write_text("b")
    assert source_digest(candidate) == before
    body.write_text("class ModelNew: x = 1\n")
    assert source_digest(candidate) != before


def test_a_store_written_before_verdicts_kept_their_sizes_opens(tmp_path):
    path = tmp_path / "old.sqlite"
    old = sqlite3.connect(str(path))
    old.execute("CREATE TABLE verdicts (key TEXT PRIMARY KEY, bench TEXT, problem_sha TEXT, "
                "candidate_sha TEXT, native_preset TEXT, options TEXT, kdiff_version TEXT, "
                "native TEXT, error TEXT, error_kind TEXT, judged_at REAL)")
    old.close()
    config, case = RunConfig(), _case(tmp_path, "k")
    with ResultsStore(path) as store:
        store.put(case, config, "kernelbench", _verdict(case, GATES))
        assert store.get(case, config, "kernelbench", GATES)[0].scaled_sizes == {"dim": (4096, 64)}


def test_a_verdict_of_other_case_code_is_not_reused(tmp_path, monkeypatch):
    """A fix to the judging loop, the worker or a native check changes case_code(): what the
    old code judged is judged again, not resumed."""
    from kdiff.verdicts import store as store_module
    code = store_module.case_code("kernelbench")
    assert code.startswith("0.1.0+") and len(code) == len("0.1.0+") + 16
    config, case = RunConfig(), _case(tmp_path, "k")
    with ResultsStore(tmp_path / "s.sqlite") as store:
        store.put(case, config, "kernelbench", _verdict(case, GATES))
        assert store.get(case, config, "kernelbench", GATES)[0] is not None
        monkeypatch.setattr(store_module, "case_code", lambda bench: "0.1.0+another")
        assert store.get(case, config, "kernelbench", GATES)[0] is None


def test_a_fix_to_one_gate_rejudges_that_gate_only(tmp_path, monkeypatch):
    """Each gate's result is keyed by that gate's code: another ORD-02 leaves EXC-01's and
    CMP-01's results standing and ORD-02's missing."""
    from kdiff.verdicts import store as store_module
    config, case = RunConfig(), _case(tmp_path, "k")
    with ResultsStore(tmp_path / "s.sqlite") as store:
        store.put(case, config, "kernelbench", _verdict(case, GATES))
        real = store_module.gate_code
        monkeypatch.setattr(store_module, "gate_code",
                            lambda gid: "0.1.0+fixed" if gid == "ORD-02" else real(gid))
        got, missing = store.get(case, config, "kernelbench", GATES)
        assert missing == ["ORD-02"] and list(got.gates) == ["EXC-01", "CMP-01"]


def test_a_recorded_run_reports_as_judged_after_a_gate_changes(tmp_path, monkeypatch):
    """Reporting a run shows what it judged, by the code of its day (an audit's records stay
    readable once a gate is fixed); only resuming asks for the gates' code now."""
    from kdiff.verdicts import store as store_module
    config, case = RunConfig(gates=GATES), _case(tmp_path, "k")
    with ResultsStore(tmp_path / "s.sqlite") as store:
        store.begin_run([case], config, "kernelbench", GATES)
        store.put(case, config, "kernelbench", _verdict(case, GATES))
        monkeypatch.setattr(store_module, "gate_code", lambda gid: "0.1.0+every-gate-fixed")
        assert store.get(case, config, "kernelbench", GATES)[1] == GATES
        info, verdicts = store.load_run()
        assert info.n_judged == 1 and list(verdicts[0].gates) == GATES


def test_a_gates_code_is_its_module_and_what_it_imports():
    """EXC-01's code: its own module, the judging core it imports (the oracle, the context)
    and the worker it runs in; never another gate's module."""
    from kdiff.data.code import closure
    from kdiff.gates.registry import GATES as CATALOGUE
    from kdiff.verdicts.code import LOADED_BY_NAME, gate_code
    modules = dict(closure("kdiff.gates.exc01_nonfinite", *LOADED_BY_NAME))
    assert {"kdiff.gates.exc01_nonfinite", "kdiff.gates.base", "kdiff.numerics.oracle",
            "kdiff.judging.context", "kdiff.sandbox"} <= set(modules)
    others = {f"kdiff.gates.{g.module}" for g in CATALOGUE if g.id != "EXC-01"}
    assert not others & set(modules)
    assert len({gate_code(g.id) for g in CATALOGUE}) == len(CATALOGUE)


def test_the_store_and_the_pools_are_not_code_a_verdict_depends_on():
    """Keeping verdicts (store, records) and scheduling judges (pools) change no verdict: a
    change to them must not re-key every stored verdict, as it did while the judging loop
    imported a constant from the store."""
    from kdiff.data.code import closure
    from kdiff.gates.registry import GATES as CATALOGUE
    from kdiff.verdicts.code import CASE_ROOT, LOADED_BY_NAME, _with_loaded
    roots = [_with_loaded(CASE_ROOT)] + [_with_loaded(f"kdiff.gates.{g.module}")
                                         for g in CATALOGUE]
    bookkeeping = {"kdiff.verdicts.store", "kdiff.verdicts.records", "kdiff.judging.interrupts",
                   "kdiff.commands.executor"}
    for modules in roots:
        assert bookkeeping.isdisjoint(m for m, _ in closure(*modules))
    assert "kdiff.judging" not in LOADED_BY_NAME


def test_transient_judge_deaths_are_not_stored(tmp_path):
    config, case = RunConfig(), _case(tmp_path, "k")
    died = Verdict(case, NativeVerdict(None, "kernelbench"), {}, error="died",
                   error_kind="judge")
    with ResultsStore(tmp_path / "s.sqlite") as store:
        assert store.put(case, config, "kernelbench", died) is False
        assert store.get(case, config, "kernelbench", GATES)[0] is None


def test_resume_judges_only_what_is_missing(tmp_path):
    cases = [_case(tmp_path, n, n) for n in ("a", "bad", "c")]
    config = RunConfig(gates=GATES)
    calls: list = []
    with ResultsStore(tmp_path / "s.sqlite") as store:
        first = list(judge_resuming(store, cases[:2], config, "kernelbench", GATES,
                                    _judge_all_fake(calls)))
        assert [v.case.id for v in first] == ["a", "bad"]
        again = list(judge_resuming(store, cases, config, "kernelbench", GATES,
                                    _judge_all_fake(calls)))
        assert calls[-1] == (["c"], GATES)  # a and bad came from the store
        assert {v.case.id: v.verifier_accept for v in again} == {"a": True, "bad": False,
                                                                 "c": True}
        # One more gate later: only that gate is judged, the others are reused.
        more = GATES + ["PRC-01"]
        merged = list(judge_resuming(store, cases, RunConfig(gates=more), "kernelbench", more,
                                     _judge_all_fake(calls)))
        assert calls[-1] == (["a", "bad", "c"], ["PRC-01"])
        assert all(list(v.gates) == more for v in merged)
        assert merged[1].gates["EXC-01"].signature == "nan_swallowed"


def test_each_verdict_is_committed_when_it_lands(tmp_path):
    """Another connection (a reader after a kill) sees a verdict as soon as put returns."""
    config, case = RunConfig(), _case(tmp_path, "k")
    path = tmp_path / "s.sqlite"
    with ResultsStore(path) as store:
        store.put(case, config, "kernelbench", _verdict(case, GATES))
        reader = sqlite3.connect(path)
        assert reader.execute("SELECT COUNT(*) FROM gate_results").fetchone()[0] == 3
        assert reader.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        reader.close()


def test_report_renders_from_the_store_alone(tmp_path, capsys):
    cases = [_case(tmp_path, n, n) for n in ("a", "bad")]
    config = RunConfig(gates=GATES)
    path = tmp_path / "s.sqlite"
    with ResultsStore(path) as store:
        run_id = store.begin_run(cases, config, "kernelbench", GATES, "kdiff run ...")
        assert store.begin_run(cases, config, "kernelbench", GATES) == run_id  # resumable
        verdicts = list(judge_resuming(store, cases, config, "kernelbench", GATES,
                                       _judge_all_fake([])))
    out = tmp_path / "r.json"
    assert main(["report", "--store", str(path), "--json", str(out),
                 "--markdown", str(tmp_path / "r.md"), "--junit", str(tmp_path / "r.xml")]) == 1
    data = json.loads(out.read_text())
    assert [k["id"] for k in data["kernels"]] == ["a", "bad"]
    assert [{k: kernel[k] for k in v.to_json()} for kernel, v in zip(data["kernels"], verdicts)
            ] == [v.to_json() for v in verdicts]
    assert data["kernels"][0]["metadata"] == {"level": 1}
    assert "nan_swallowed" in (tmp_path / "r.md").read_text()
    assert "kdiff run: bench kernelbench" in capsys.readouterr().out
    assert main(["report", "--store", str(path), "--list"]) == 0
    assert f"{run_id}  kernelbench" in capsys.readouterr().out
    assert main(["report", "--store", str(tmp_path / "none.sqlite")]) == 2


def test_an_unfinished_run_reports_what_it_judged(tmp_path, capsys):
    cases = [_case(tmp_path, n, n) for n in ("a", "b", "c")]
    config = RunConfig(gates=GATES)
    path = tmp_path / "s.sqlite"
    with ResultsStore(path) as store:
        store.begin_run(cases, config, "kernelbench", GATES)
        store.put(cases[1], config, "kernelbench", _verdict(cases[1], GATES))
        info, verdicts = store.load_run()
    assert (info.n_cases, [v.case.id for v in verdicts]) == (3, ["b"])
    assert main(["report", "--store", str(path), "--fail-on", "never"]) == 0
    assert "unfinished: 1 of 3" in capsys.readouterr().err


def test_several_runs_pool_into_one_report(tmp_path, capsys):
    """An audit over several models' files: one report over their kernels together."""
    path = tmp_path / "s.sqlite"
    config = RunConfig(gates=GATES)
    with ResultsStore(path) as store:
        ids = []
        for names in (("a", "bad"), ("c",)):
            cases = [_case(tmp_path, n, n) for n in names]
            ids.append(store.begin_run(cases, config, "kernelbench", GATES))
            list(judge_resuming(store, cases, config, "kernelbench", GATES, _judge_all_fake([])))
        other = [_case(tmp_path, "t", "t")]
        foreign = store.begin_run(other, config, "tritonbench", GATES)
    out = tmp_path / "pooled.json"
    assert main(["report", "--store", str(path), "--run", ids[0], "--run", ids[1],
                 "--json", str(out), "--fail-on", "never"]) == 0
    assert [k["id"] for k in json.loads(out.read_text())["kernels"]] == ["a", "bad", "c"]
    assert main(["report", "--store", str(path), "--run", ids[0], "--run", foreign]) == 2
    assert "cannot be pooled" in capsys.readouterr().err


@pytest.mark.parametrize("bad", ["zzz"])
def test_unknown_run_id_is_a_usage_error(tmp_path, bad):
    path = tmp_path / "s.sqlite"
    with ResultsStore(path) as store:
        store.begin_run([_case(tmp_path, "a")], RunConfig(gates=GATES), "kernelbench", GATES)
    assert main(["report", "--store", str(path), "--run", bad]) == 2


CHECKOUT = Path(__file__).parent / "fixtures" / "kernelbench_checkout"


def _run_args(store: Path, report: Path) -> list[str]:
    return ["run", "--bench", "kernelbench", "--root", str(CHECKOUT), "--runs",
            str(CHECKOUT / "runs" / "run_a"), "--gates", "ORD-02", "--device", "cpu",
            "--jobs", "1", "--store", str(store), "--json", str(report), "--fail-on", "never"]


def _timeless(report: Path) -> list[dict]:
    kernels = json.loads(report.read_text())["kernels"]
    for k in kernels:
        for timed in (k["native"], *k["gates"].values()):
            timed.pop("seconds", None)
    return kernels


def _judged(store: Path) -> dict[str, float]:
    if not store.exists():
        return {}
    try:
        with sqlite3.connect(store) as db:
            return dict(db.execute("SELECT key, judged_at FROM verdicts"))
    except sqlite3.OperationalError:  # not created yet
        return {}


def test_a_run_killed_midway_resumes_to_the_uninterrupted_report(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time
    store = tmp_path / "killed.sqlite"
    proc = subprocess.Popen([sys.executable, "-m", "kdiff.commands.cli",
                             *_run_args(store, tmp_path / "killed.json")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while not _judged(store) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    os.kill(proc.pid, signal.SIGKILL)  # as a lost machine or an OOM kill would
    proc.wait()
    before = _judged(store)
    assert 1 <= len(before) < 7, "kill the run between its first and its last verdict"
    assert main(_run_args(store, tmp_path / "resumed.json")) == 0
    after = _judged(store)
    assert {k: after[k] for k in before} == before  # judged once, not again
    assert main(_run_args(tmp_path / "whole.sqlite", tmp_path / "whole.json")) == 0
    assert _timeless(tmp_path / "resumed.json") == _timeless(tmp_path / "whole.json")
    assert main(["report", "--store", str(store), "--json", str(tmp_path / "stored.json"),
                 "--fail-on", "never"]) == 0
    assert _timeless(tmp_path / "stored.json") == _timeless(tmp_path / "resumed.json")
