"""Verdict records: a store's verdicts exported to a compressed file and imported into a
fresh store render the same report, keep no third-party code, are the same bytes for the
same store, never overwrite a local verdict, and keep each gate's code digest."""
import dataclasses
import gzip
import json
from pathlib import Path

import pytest

from kdiff.commands.cli import main
from kdiff.data.model import Case, GateResult, NativeVerdict, Status, Verdict
from kdiff.data.provenance import KernelShare, Origin, Provenance, ProvenanceKind
from kdiff.judging.runconfig import RunConfig
from kdiff.verdicts import records
from kdiff.verdicts.store import ResultsStore

GATES = ["EXC-01", "ORD-02", "CMP-01"]
PRESET = "kernelbench"
MISMATCH = "output mismatch (max difference 0.0472965, mean 0.00749)"
TRIALS = "5/5 trials within atol=rtol=0.0001"
# What a candidate's or a benchmark's exceptions carry: a message written in its file, and a
# traceback quoting its source lines.
THIRD_PARTY = "This specialized Model expects input shape (16, 32, 128, 128)"
SOURCE_LINE = "assert x.shape == (16, 32, 128, 128), msg"
TRACEBACK = (f"AssertionError: {THIRD_PARTY}\nTraceback (most recent call last):\n"
             f'  File "/kb/level1/cand.py", line 12, in forward\n    {SOURCE_LINE}\n')


def _case(tmp_path: Path, name: str, **metadata) -> Case:
    problem = tmp_path / "problem.py"
    if not problem.exists():
        problem.write_text("# problem\n")
    candidate = tmp_path / f"{name}.py"
    candidate.write_text(f"# candidate {name}\n")
    return Case(id=name, problem=problem, candidate=candidate,
                metadata={"level": 1, **metadata})


def _verdict(case: Case, fail: str | None = None, detail: str = "no difference",
             reason: str = TRIALS) -> Verdict:
    gates = {g: GateResult(g, Status.FAIL if g == fail else Status.PASS,
                           "nan_swallowed" if g == fail else None,
                           detail if g == fail else MISMATCH, 0.5, seconds=1.25)
             for g in GATES}
    provenance = Provenance(ProvenanceKind.OWN, [KernelShare("relu_kernel", Origin.OWN,
                                                             "triton", 5)], calls=5)
    return Verdict(case, NativeVerdict(True, PRESET, reason=reason), gates,
                   scaled_sizes={"dim": (4096, 64)}, provenance=provenance)


def _store(tmp_path: Path, verdicts: list[Verdict], name: str = "a.sqlite") -> Path:
    """A store holding `verdicts` and one run of their cases."""
    path, config = tmp_path / name, RunConfig(gates=GATES)
    with ResultsStore(path) as store:
        store.begin_run([v.case for v in verdicts], config, PRESET, GATES, "kdiff run ...")
        for v in verdicts:
            store.put(v.case, config, PRESET, v)
    return path


def _text(path: Path) -> str:
    return gzip.decompress(path.read_bytes()).decode()


@pytest.mark.parametrize("text, kept", [
    (MISMATCH, MISMATCH),
    (TRIALS, TRIALS),
    (TRACEBACK, "AssertionError (message not kept)"),
    ("kdiff error: torch.cuda.OutOfMemoryError: Tried to allocate 2 GiB",
     "kdiff error: torch.cuda.OutOfMemoryError (message not kept)"),
    ("the reference does not run: SystemExit", "the reference does not run: SystemExit"
     " (message not kept)"),
    ("first line\nsecond line", "first line"),
    ("x" * 300, "x" * 200),
])
def test_redact_keeps_kdiffs_words_and_cuts_exception_messages(text, kept):
    assert records.redact(text) == kept


def test_export_then_import_renders_the_same_report(tmp_path, capsys):
    a = _store(tmp_path, [_verdict(_case(tmp_path, "good")),
                          _verdict(_case(tmp_path, "bad"), fail="EXC-01")])
    out = tmp_path / "audits" / "a.jsonl.gz"
    assert main(["records", "export", "--store", str(a), "--out", str(out)]) == 0
    assert capsys.readouterr().out.startswith(
        f"wrote 2 verdicts, 6 gate results, 1 run to {out} (")
    b = tmp_path / "fresh" / "b.sqlite"
    assert main(["records", "import", str(out), "--store", str(b)]) == 0
    assert capsys.readouterr().out == f"imported 2 verdicts, 6 gate results, 1 run into {b}\n"
    with ResultsStore(a) as store:
        run_a, verdicts_a = store.load_run()
    with ResultsStore(b) as store:
        run_b, verdicts_b = store.load_run()
    assert run_b == run_a
    assert [v.to_json() for v in verdicts_b] == [v.to_json() for v in verdicts_a]
    assert [v.verifier_accept for v in verdicts_b] == [True, False]
    reports = []
    for store in (a, b):
        assert main(["report", "--store", str(store)]) == 1  # the red verdict
        reports.append(capsys.readouterr().out)
    assert reports[1] == reports[0] and "nan_swallowed" in reports[0]


def test_no_third_party_text_leaves_the_machine(tmp_path):
    planted = _case(tmp_path, "planted", source=f"def forward(x):\n    {SOURCE_LINE}\n",
                    prompt="p" * 121, shape=[16, 32], nested={"a": 1})
    planted.discovery_error = TRACEBACK
    verdict = _verdict(planted, fail="CMP-01", detail=f"kdiff error: {TRACEBACK}",
                       reason=f"the candidate raised: {TRACEBACK}")
    verdict.provenance.detail = TRACEBACK
    broken = _case(tmp_path, "broken")
    error = Verdict(broken, NativeVerdict(None, PRESET, reason=TRACEBACK), {},
                    error=f"candidate does not import: {TRACEBACK}", error_kind="candidate")
    a = _store(tmp_path, [verdict, error])
    out = tmp_path / "a.jsonl.gz"
    records.export(a, out)
    text = _text(out)
    assert THIRD_PARTY not in text and SOURCE_LINE not in text and "cand.py" not in text
    assert "p" * 121 not in text and "nested" not in text
    assert MISMATCH in text and "candidate does not import: AssertionError (message not kept)" \
        in text
    loaded = records.load([out])
    assert loaded.runs[0].cases[0].case["metadata"] == {"level": 1, "shape": [16, 32]}


def test_two_exports_of_one_store_are_the_same_bytes(tmp_path):
    a = _store(tmp_path, [_verdict(_case(tmp_path, n)) for n in ("k3", "k1", "k2")])
    first, second = tmp_path / "1.jsonl.gz", tmp_path / "2.jsonl.gz"
    records.export(a, first)
    records.export(a, second)
    assert first.read_bytes() == second.read_bytes()
    assert first.read_bytes()[4:8] == b"\0\0\0\0"  # gzip's mtime: no time of writing
    keys = [json.loads(line)["key"] for line in _text(first).splitlines()[1:]]
    assert len(keys) == 3 and keys == sorted(keys)


def test_import_keeps_a_verdict_judged_locally(tmp_path, capsys):
    case = _case(tmp_path, "k")
    elsewhere = _verdict(case, fail="ORD-02")
    elsewhere.native.accept = False
    out = tmp_path / "a.jsonl.gz"
    records.export(_store(tmp_path, [elsewhere]), out)
    local = _store(tmp_path, [_verdict(case)], "local.sqlite")
    assert main(["records", "import", str(out), "--store", str(local)]) == 0
    assert capsys.readouterr().out == (
        f"imported 0 verdicts, 0 gate results, 0 runs into {local} (of 1 verdict, 3 gate "
        "results, 1 run read; the rest were there already and kept)\n")
    with ResultsStore(local) as store:
        verdict, missing = store.get(case, RunConfig(gates=GATES), PRESET, GATES)
    assert missing == [] and verdict.native.accept is True and verdict.verifier_accept is True


def test_an_imported_verdict_is_reused_gate_by_gate_by_its_code(tmp_path):
    case = _case(tmp_path, "k")
    out = tmp_path / "a.jsonl.gz"
    records.export(_store(tmp_path, [_verdict(case)]), out)
    config = RunConfig(gates=GATES)
    records.import_into(tmp_path / "b.sqlite", [out])
    with ResultsStore(tmp_path / "b.sqlite") as store:
        verdict, missing = store.get(case, config, PRESET, GATES)
    assert missing == [] and list(verdict.gates) == GATES
    # ORD-02 judged by other code than today's: judged again, alone.
    loaded = records.load([out])
    for gate in loaded.verdicts[0].gates:
        if gate.gate == "ORD-02":
            gate.code = "0.1.0+another"
    records.write(loaded, out)
    records.import_into(tmp_path / "c.sqlite", [out])
    with ResultsStore(tmp_path / "c.sqlite") as store:
        verdict, missing = store.get(case, config, PRESET, GATES)
    assert missing == ["ORD-02"] and list(verdict.gates) == ["EXC-01", "CMP-01"]


def _another_format(path: Path) -> None:
    path.write_bytes(gzip.compress(b'{"format": "something else"}\n'))


def _bad_verdict_line(path: Path) -> None:
    line = {"format": records.FORMAT, "version": records.VERSION, "runs": []}
    path.write_bytes(gzip.compress((json.dumps(line) + '\n{"key": "k"}\n').encode()))


@pytest.mark.parametrize("make, cause", [
    (lambda p: p.write_bytes(b"no gzip here"), "not gzip-compressed"),
    (lambda p: p.write_bytes(gzip.compress(b"not json\n")), "line 1 does not parse"),
    (_another_format, "line 1 is no header"),
    (_bad_verdict_line, "line 2 does not parse"),
    (lambda p: None, "cannot be read (No such file"),
])
def test_a_file_that_is_no_records_is_one_line_exit_2(tmp_path, capsys, make, cause):
    bad = tmp_path / "bad.jsonl.gz"
    make(bad)
    store = tmp_path / "b.sqlite"
    assert main(["records", "import", str(bad), "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{bad}: " in err and cause in err, err
    assert not store.exists()  # nothing is imported from a set with a bad file


def test_export_refuses_a_name_that_is_no_records_file(tmp_path, capsys):
    a = _store(tmp_path, [_verdict(_case(tmp_path, "k"))])
    assert main(["records", "export", "--store", str(a), "--out", str(tmp_path / "a.json")]) == 2
    assert "ends in .jsonl.gz" in capsys.readouterr().err


def test_export_of_one_run_holds_its_verdicts_only(tmp_path):
    config = RunConfig(gates=GATES)
    first, second = _verdict(_case(tmp_path, "one")), _verdict(_case(tmp_path, "two"))
    path = _store(tmp_path, [first])
    with ResultsStore(path) as store:
        run_two = store.begin_run([second.case], config, PRESET, GATES)
        store.put(second.case, config, PRESET, second)
    out = tmp_path / "two.jsonl.gz"
    written = records.export(path, out, run_two[:6])
    assert [r.id for r in written.runs] == [run_two]
    assert [c.case["id"] for c in written.runs[0].cases] == ["two"]
    assert written.tally() == records.Tally(1, 3, 1)
    assert dataclasses.asdict(records.load([out])) == dataclasses.asdict(written)
