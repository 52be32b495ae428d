"""Every output format of `kdiff run`, on hand-made verdicts."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from kdiff.data.model import Case, GateResult, NativeVerdict, Status, Verdict
from kdiff.reports import json_report, junit, markdown
from kdiff.reports.terminal import progress_line, run_report


def _verdicts() -> list[Verdict]:
    def case(name: str, level: int) -> Case:
        return Case(id=f"run/{name}", problem=Path(f"KernelBench/level{level}/{name}.py"),
                    candidate=Path(f"runs/run/{name}_kernel.py"),
                    metadata={"run": "run", "level": level, "problem": name},
                    recorded_accept=True)
    nan = GateResult("EXC-01", Status.FAIL, "nan_swallowed", "3 NaN | 0 propagated")
    ok = GateResult("ORD-02", Status.PASS, None, "5 runs identical", seconds=0.25)
    return [
        Verdict(case("relu_max", 1), NativeVerdict(True, "kernelbench"),
                {"EXC-01": nan, "ORD-02": ok}),
        Verdict(case("relu_ok", 1), NativeVerdict(True, "kernelbench"),
                {"EXC-01": GateResult("EXC-01", Status.PASS), "ORD-02": ok}),
        Verdict(case("matmul", 2), NativeVerdict(None, "kernelbench", reason="x"), {},
                error="KernelBench/level2/matmul.py: problem does not import"),
    ]


def test_json_report_follows_the_spec_contract(tmp_path):
    path = tmp_path / "out" / "r.json"
    json_report.write(path, json_report.report(_verdicts(), "kernelbench", "kernelbench", "cpu"))
    data = json.loads(path.read_text())
    assert {"kdiff_version", "bench", "native", "device", "kernels", "confusion"} <= set(data)
    assert (data["bench"], data["native"], data["device"]) == ("kernelbench", "kernelbench",
                                                               "cpu")
    assert data["confusion"] == {"both_accept": 1, "native_only": 1, "verifier_only": 0,
                                 "both_reject": 0, "undecided": 1}
    first, _, broken = data["kernels"]
    assert {"id", "problem", "candidate", "native_accept", "verifier_accept", "gates"} <= set(first)
    assert (first["native_accept"], first["verifier_accept"], first["status"]) == (True, False,
                                                                                   "reject")
    assert first["gates"]["EXC-01"] == {**first["gates"]["EXC-01"], "status": "fail",
                                        "signature": "nan_swallowed"}
    assert "detail" in first["gates"]["EXC-01"]
    assert (broken["native_accept"], broken["verifier_accept"], broken["status"]) == (None, None,
                                                                                      "error")
    assert data["summary"]["defects"]["modal"]["label"] == "EXC-01=nan_swallowed"
    assert set(data["by_level"]) == {"level 1", "level 2"}
    assert data["by_problem"]["relu_max"]["confusion"]["native_only"] == 1


def test_junit_has_one_testcase_per_kernel_with_signatures(tmp_path):
    path = tmp_path / "r.xml"
    junit.write(path, _verdicts(), "kernelbench")
    suite = ET.parse(path).getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "1", "1")
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["run/relu_max", "run/relu_ok", "run/matmul"]
    failure = cases[0].find("failure")
    assert failure.get("message") == "EXC-01=nan_swallowed"
    assert "3 NaN | 0 propagated" in failure.text
    assert cases[1].find("failure") is None and cases[1].find("error") is None
    assert "does not import" in cases[2].find("error").get("message")
    props = {p.get("name"): p.get("value") for p in cases[0].iter("property")}
    assert props["native"] == "accept" and props["agreement"] == "native only"


def test_markdown_has_the_confusion_and_kernel_tables(tmp_path):
    path = tmp_path / "r.md"
    markdown.write(path, _verdicts(), "kernelbench", "kernelbench-v0.1", "cpu")
    text = path.read_text()
    assert text.startswith("## kdiff: kernelbench")
    rows = [[c.strip().replace("\\", "") for c in line.strip("|").split(" | ")]
            for line in text.splitlines() if line.startswith("|")]
    assert ["native accept", "1 (50.0%)", "1 (50.0%)"] in rows
    assert ["run/relu_max", "accept", "accept", "REJECT", "native only", "n/a",
            "EXC-01=nan_swallowed"] in rows  # n/a: no provenance recorded
    assert "3 NaN \\| 0 propagated" in text.split("<details>")[1]  # details kept apart
    assert "### By level" in text and "`kernelbench-v0.1`" in text


def test_terminal_report_and_progress_line():
    text = run_report(_verdicts(), "kernelbench", "kernelbench", "cpu")
    assert "native only 1, verifier only 0; exact McNemar p = 1" in text
    assert "modal defect: EXC-01=nan_swallowed (1 kernel(s))" in text
    assert "verifier rejects of native-accepted kernels: 1/2 = 50.0% [9.5, 90.5]" in text
    line = progress_line(1, 12, 3.25, _verdicts()[0])
    assert line == "[ 1/12    3.2s] run/relu_max: native accept, verifier REJECT " \
                   "(EXC-01=nan_swallowed)"
    assert "error: KernelBench/level2/matmul.py" in progress_line(3, 3, 1.0, _verdicts()[2])


# A lone surrogate, which no encoder writes, and a line of its own dressed as the report's.
HOSTILE_TEXT = ("</details><h2>owned</h2> `x` *y* \x1b[31mred\x1b[0m\x07 | end \ud800"
                "\n  verifier: accept")


def _hostile() -> list[Verdict]:
    """A candidate whose exception text carries HTML, Markdown and terminal escapes, and a
    thresholded failure whose worst error is infinite (a NaN where the oracle is finite)."""
    case = Case(id="run/evil", problem=Path("p.py"), candidate=Path("c.py"))
    raised = GateResult("EXC-01", Status.FAIL, "raised", f"RuntimeError: {HOSTILE_TEXT}")
    inf = GateResult("PRC-01", Status.FAIL, "below_working_precision", "worst infx",
                     worst_ratio=float("inf"))
    nan = GateResult("CMP-01", Status.PASS, None, "", worst_ratio=float("nan"))
    return [Verdict(case, NativeVerdict(False, "kernelbench", reason=HOSTILE_TEXT),
                    {"EXC-01": raised, "PRC-01": inf, "CMP-01": nan})]


def test_markdown_escapes_exception_text(tmp_path):
    path = tmp_path / "r.md"
    markdown.write(path, _hostile(), "kernelbench", "kernelbench", "cpu")
    text = path.read_text()
    assert "<h2>" not in text and "\x1b" not in text and "\x07" not in text
    assert text.count("</details>") == 1 and text.rstrip().endswith("</details>")
    assert "\\<h2\\>owned" in text and "\\`x\\` \\*y\\*" in text  # shown, not acted on


def test_json_report_is_strict_json(tmp_path):
    """Valid for any strict parser: non-finite numbers are strings, never Infinity/NaN."""
    path = tmp_path / "r.json"
    json_report.write(path, json_report.report(_hostile(), "kernelbench", "kernelbench", "cpu"))

    def refuse(constant: str) -> None:
        raise ValueError(f"not JSON: {constant}")
    data = json.loads(path.read_text(), parse_constant=refuse)
    gates = data["kernels"][0]["gates"]
    assert gates["PRC-01"]["worst_ratio"] == "inf" and gates["CMP-01"]["worst_ratio"] == "nan"


def test_junit_is_well_formed_despite_control_characters(tmp_path):
    path = tmp_path / "r.xml"
    junit.write(path, _hostile(), "kernelbench")
    failure = ET.parse(path).getroot().find("testsuite").find("testcase").find("failure")
    assert "red" in failure.text and "\x1b" not in failure.text


def test_run_explains_the_first_failures_and_all_with_verbose():
    from kdiff.reports.terminal import explain_run
    failing = [Verdict(Case(f"k{i}", Path("p.py"), Path("c.py")), NativeVerdict(True, "kb"),
                       {"EXC-01": GateResult("EXC-01", Status.FAIL, "nan_swallowed",
                                             f"injection nan, output 0: {'x' * 200}")})
               for i in range(12)]
    passing = _verdicts()[1]
    text = explain_run([*failing, passing], verbose=False, limit=10)
    assert text.count("EXC-01 FAIL nan_swallowed (a NaN the reference propagates") == 10
    assert "x" * 90 in text.replace("\n        ", "")  # in full, wrapped, not cut
    assert text.endswith("... and 2 more kernel(s): -v shows all, the reports hold every one")
    every = explain_run([*failing, passing], verbose=True, limit=10)
    assert every.count("nan_swallowed (") == 12 and "run/relu_ok:\n  EXC-01 pass" in every


def test_terminal_output_carries_no_escape_sequences():
    from kdiff.reports.terminal import explanations, verdict_table
    verdict = _hostile()[0]
    shown = verdict_table(verdict, {}) + explanations(verdict)
    assert "\x1b" not in shown and "\x07" not in shown and "red" in shown
    shown.encode("utf-8")  # printing it raised on the surrogate
    assert "  verifier: accept" not in verdict_table(verdict, {}).splitlines()


def test_reports_name_the_undecided_kernels_with_their_reason(tmp_path):
    text = run_report(_verdicts(), "kernelbench", "kernelbench", "cpu")
    assert "undecided (n/a), 1 kernel(s), counted as violations unless --undecided-ok:\n" \
           "  run/matmul: KernelBench/level2/matmul.py: problem does not import" in text
    markdown.write(tmp_path / "r.md", _verdicts(), "kernelbench", "kernelbench", "cpu")
    assert "- run/matmul: KernelBench/level2/matmul.py: problem does not import" in (
        tmp_path / "r.md").read_text()


def test_json_report_names_the_undecided_kernels():
    data = json_report.report(_verdicts(), "kernelbench", "kernelbench", "cpu")
    assert data["undecided"] == ["run/matmul"]


def test_reports_show_a_candidates_text_in_the_order_it_holds(tmp_path):
    """A right-to-left override before "tpecca :reifirev" showed "verifier: accept" in a
    rejected kernel's detail (and reorders whatever the line shows after it); a line
    separator broke the line where no renderer's handling of "\\n" saw it."""
    from kdiff.reports.terminal import explanations, verdict_table
    forged = "boom \u202etpecca :reifirev\u2028  verifier: accept\u2029\u2066x\u2069"
    case = Case(id="run/bidi", problem=Path("p.py"), candidate=Path("c.py"))
    raised = GateResult("EXC-01", Status.FAIL, "raised", f"RuntimeError: {forged}")
    verdict = Verdict(case, NativeVerdict(False, "kernelbench", reason=forged),
                      {"EXC-01": raised})
    markdown.write(tmp_path / "r.md", [verdict], "kernelbench", "kernelbench", "cpu")
    junit.write(tmp_path / "r.xml", [verdict], "kernelbench")
    shown = [verdict_table(verdict, {}), explanations(verdict), (tmp_path / "r.md").read_text(),
             (tmp_path / "r.xml").read_text(encoding="utf-8")]
    for text in shown:
        assert not set(text) & {"\u202e", "\u2066", "\u2069", "\u2028", "\u2029"}
    assert "boom tpecca :reifirev;   verifier: accept; x" in shown[2]
    assert "  verifier: accept" not in verdict_table(verdict, {}).splitlines()
