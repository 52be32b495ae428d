"""benchmarks/audit_tables.py: one row per audited file, the latest full run of each, and a
pooled row over them; the quick profile's recall where a file has a quick run too."""
import sys
from pathlib import Path

from kdiff.data.model import Case, GateResult, NativeVerdict, Status, Verdict
from kdiff.judging.runconfig import RunConfig
from kdiff.verdicts.store import ResultsStore

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import audit_tables

GATES = ["EXC-01", "CMP-03"]


def _verdict(case: Case, native: bool, failing: str | None) -> Verdict:
    return Verdict(case, NativeVerdict(native, "tritonbench"),
                   {g: GateResult(g, Status.FAIL if g == failing else Status.PASS,
                                  "nan_swallowed" if g == failing else None)
                    for g in GATES})


def _run(store: ResultsStore, tmp_path: Path, file: str, rows: list, extra: str = "",
         judged: int | None = None) -> None:
    config = RunConfig(gates=GATES, bench="tritonbench")
    cases = []
    for i, _ in enumerate(rows):
        candidate = tmp_path / f"{file}-{i}{extra}.py"
        candidate.write_text(f"# {file} {i} {extra}\n")
        cases.append(Case(f"{file}/{i}", tmp_path / "gold.py", candidate, bench="tritonbench"))
    store.begin_run(cases, config, "tritonbench", GATES,
                    f"kdiff run --bench tritonbench --generated LLM/{file}.jsonl {extra}")
    for case, (native, failing) in list(zip(cases, rows))[:judged]:
        store.put(case, config, "tritonbench", _verdict(case, native, failing))


def test_rows_per_file_and_pooled(tmp_path, capsys):
    (tmp_path / "gold.py").write_text("# gold\n")
    path = tmp_path / "s.sqlite"
    with ResultsStore(path) as store:
        _run(store, tmp_path, "model_a", [(True, None), (True, "EXC-01"), (False, "CMP-03")])
        _run(store, tmp_path, "model_b", [(True, "EXC-01"), (False, None)])
        # a quick run of model_a, later: its recall against the full run, never pooled; it
        # catches the tolerance-free failure and misses the CMP-03 one
        _run(store, tmp_path, "model_a", [(True, None), (True, "EXC-01"), (False, None)],
             extra="--profile quick")
        # a later run of model_b, interrupted after one of its two kernels: not the row
        _run(store, tmp_path, "model_b", [(True, None), (True, None)], extra="--case-timeout 9",
             judged=1)
    assert audit_tables.main(["--store", str(path), "--bench", "tritonbench"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = {line.split(" | ")[0].strip("| *"): line.strip(" |").split(" | ")[1:]
            for line in lines[2:]}
    cells = {name: row[:7] for name, row in rows.items()}
    # kernels, decided, both accept, native only, verifier only, both reject, McNemar p
    assert cells["model_a"] == ["3", "3", "1", "1", "0", "1", "1"]
    assert cells["model_b"] == ["2", "2", "0", "1", "1", "0", "1"]
    assert cells["pooled, 2 runs"] == ["5", "5", "1", "2", "1", "1", "1"]
    recall = {name: row[-1] for name, row in rows.items()}
    assert recall == {"model_a": "1/2 = 50.0%", "model_b": "-", "pooled, 2 runs": "1/2 = 50.0%"}
