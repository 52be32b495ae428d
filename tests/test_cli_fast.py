"""The command line a user meets first: instant answers (no torch behind --help, gates or a
usage error), help that states every default, one-line usage errors, a header before the
first kernel, and progress that says how far a run is. No candidate runs here."""
from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from kdiff.commands import cli
from kdiff.commands.cli import build_parser, main
from kdiff.data.model import Case, GateResult, NativeVerdict, Status, Verdict
from kdiff.reports.progress import Progress, status_line

FIXTURES = Path(__file__).parent / "fixtures"
CHECKOUT = FIXTURES / "kernelbench_checkout"
HEAVY = ("torch", "triton", "numpy", "kdiff.gates.base", "kdiff.sandbox.process")

# Each of these must answer before anything heavy is imported.
INSTANT = [["--help"], ["gates"], ["gates", "--verbose", "--json"], ["run", "--help"],
           ["run", "--bench", "kernelbench", "--jobs", "0"],
           ["run", "--bench", "kernelbench", "--gates", "XYZ-9"],
           ["verify", "--problem", "missing.py", "--candidate", "missing.py"],
           ["verify", "--problem", "p.py"],
           ["run", "--bench", "kernelbench", "--call-timeout", "-1"],
           ["run", "--bench", "kernelbench", "--root", "/nonexistent/kb"]]


@pytest.mark.parametrize("argv", INSTANT, ids=" ".join)
def test_help_gates_and_usage_errors_import_nothing_heavy(argv):
    """Checked on the modules imported, not on wall time: a fresh interpreter runs the
    command and lists which of HEAVY it loaded."""
    script = (f"import sys; from kdiff.commands.cli import main\n"
              f"try:\n    code = main({argv!r})\nexcept SystemExit as e:\n    code = e.code\n"
              f"print('LOADED', [m for m in {HEAVY!r} if m in sys.modules], code)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith("LOADED [] "), (last, done.stderr[-500:])
    assert last.split()[-1] in ("0", "2")


def _options(parser: argparse.ArgumentParser, path: str = "kdiff"):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options(sub, f"{path} {name}")
        elif action.option_strings and action.dest != "help":
            yield path, action


def test_every_option_has_help_with_its_default():
    missing = []
    for path, action in _options(build_parser()):
        text = action.help or ""
        flag = action.option_strings[-1]
        takes_value = action.nargs != 0
        if not text or (takes_value and not action.required and "default" not in text):
            missing.append(f"{path} {flag}")
    assert not missing, missing
    help_of = {f"{p} {a.option_strings[-1]}": a.help % {"default": a.default}
               for p, a in _options(build_parser())}
    assert "(default: 120)" in help_of["kdiff run --call-timeout"]
    assert "kernelbench-v0.1 (allclose atol=rtol=1e-2)" in help_of["kdiff verify --native"]
    assert "atol=rtol=1e-4" in help_of["kdiff run --native"]


def test_the_stated_defaults_are_the_sandboxs():
    from kdiff.sandbox.process import SandboxLimits
    limits = SandboxLimits()
    assert (cli.CALL_TIMEOUT_S, cli.CASE_TIMEOUT_S) == (limits.call_timeout,
                                                        limits.case_timeout)


def test_the_stated_native_defaults_are_the_adapters():
    from kdiff.judging.plugins import manager
    from kdiff.judging.runconfig import RunConfig
    pm = manager()
    shipped = pm.hook.kdiff_default_preset(bench="kernelbench", config=RunConfig())
    checkout = (pm.hook.kdiff_default_preset(bench="kernelbench", config=RunConfig(root=CHECKOUT))
                or pm.hook.kdiff_native_presets(bench="kernelbench")[0])
    for name, stated in ((shipped, cli.SHIPPED_PRESET), (checkout, cli.CHECKOUT_PRESET)):
        described = pm.hook.kdiff_describe_preset(bench="kernelbench", preset=name)
        tolerance = stated.split("(")[1].split()[1].rstrip(")")  # "atol=rtol=1e-2"
        assert stated.split()[0] == name and tolerance in described, (stated, described)


@pytest.mark.parametrize("argv, message", [
    (["run", "--bench", "kernelbench", "--jobs", "0"], "argument --jobs: must be at least 1"),
    (["run", "--bench", "kernelbench", "--jobs", "two"], "argument --jobs: not a number"),
    (["run", "--bench", "kernelbench", "--max-elements", "0"], "--max-elements: must be at"),
    (["verify", "--problem", "p.py", "--candidate", "c.py", "--case-timeout", "0"],
     "--case-timeout: must be above 0"),
    (["run", "--bench", "kernelbench", "--chosen-seed", "-1"], "--chosen-seed: must be at"),
    (["verify", "--problem", str(FIXTURES / "core" / "scale_sum.py"), "--candidate",
      str(FIXTURES / "core" / "scale_sum.py"), "--chosen-seed", str(1 << 64)],
     "--chosen-seed: 18446744073709551616: not a seed"),
    (["run"], "the following arguments are required: --bench"),
    (["nosuchcommand"], "invalid choice"),
])
def test_usage_errors_are_one_line_exit_2(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


def test_a_chosen_seed_given_is_the_one_every_gate_draws_at(monkeypatch):
    """--chosen-seed, else KDIFF_CHOSEN_SEED, else a new secret seed per kernel: the seed a
    failure's trial label names draws the same inputs again."""
    from kdiff.commands.invocation import make_config
    from kdiff.data.problem import load_problem
    from kdiff.gates.base import with_one_chosen
    from kdiff.judging.context import GateContext, GateOptions
    argv = ["verify", "--problem", "p.py", "--candidate", "c.py"]
    monkeypatch.delenv("KDIFF_CHOSEN_SEED", raising=False)
    given = make_config(build_parser().parse_args([*argv, "--chosen-seed", "1048600"]),
                        "kernelbench").gate_options
    assert given.chosen_seed == 1048600
    assert make_config(build_parser().parse_args(argv), "kernelbench").gate_options \
        .chosen_seed is None
    problem = load_problem(FIXTURES / "core" / "scale_sum.py")
    drawn = [GateContext(problem, None, GateOptions()).chosen_seed for _ in range(3)]
    assert len(set(drawn)) == 3  # secret: 3 of 2^64
    ctx = GateContext(problem, None, given)
    assert str(with_one_chosen(ctx, [0])[-1]) == "seed 1048600 (chosen for this verdict)"
    monkeypatch.setenv("KDIFF_CHOSEN_SEED", "1048601")
    assert GateContext(problem, None, GateOptions()).chosen_seed == 1048601
    with pytest.raises(ValueError, match="not a seed"):  # no key of chosen_draw_seed
        GateContext(problem, None, GateOptions(chosen_seed=1 << 64))


def test_a_chosen_seed_setting_that_is_no_seed_is_a_usage_error(monkeypatch, capsys):
    monkeypatch.setenv("KDIFF_CHOSEN_SEED", "twelve")
    problem = str(FIXTURES / "core" / "scale_sum.py")
    assert main(["verify", "--problem", problem, "--candidate", problem]) == 2
    _one_line(capsys, "KDIFF_CHOSEN_SEED='twelve': not a seed")


def test_gates_verbose_lists_every_signature_and_term(capsys):
    from kdiff.gates.registry import SIGNATURES, TERMS
    assert main(["gates", "--verbose", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [s["signature"] for s in data["signatures"]] == list(SIGNATURES)
    assert set(data["terms"]) == set(TERMS) and len(data["gates"]) == 12
    assert main(["gates", "-v"]) == 0
    text = capsys.readouterr().out
    assert all(name in text for name in SIGNATURES) and "worst Nx of it" in text


def _one_line(capsys, words: str) -> None:
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1 and "Traceback" not in err, err


def test_a_store_that_is_not_a_store_is_unreadable_input(tmp_path, capsys, monkeypatch):
    import sqlite3
    monkeypatch.chdir(tmp_path)
    garbage, foreign = tmp_path / "garbage.sqlite", tmp_path / "foreign.sqlite"
    garbage.write_bytes(b"this is no SQLite file" * 100)
    other = sqlite3.connect(foreign)  # another program's database, a table name in common
    other.execute("CREATE TABLE verdicts (x INTEGER)")
    other.commit()
    other.close()
    for store in (garbage, foreign):
        assert main(["report", "--store", str(store)]) == 2
        _one_line(capsys, "not a readable results store")
    # `kdiff run` opens its store before judging: the same one line
    assert main(["run", "--bench", "kernelbench", "--root", str(CHECKOUT), "--runs",
                 str(CHECKOUT / "runs" / "run_a"), "--problems", "9", "--gates", "ORD-02",
                 "--device", "cpu", "--store", str(garbage)]) == 2
    _one_line(capsys, "not a readable results store")


def test_a_store_with_damaged_rows_is_unreadable_input(tmp_path, capsys, monkeypatch):
    import sqlite3
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "s.sqlite"
    run = ["run", "--bench", "kernelbench", "--root", str(CHECKOUT), "--runs",
           str(CHECKOUT / "runs" / "run_a"), "--problems", "9", "--gates", "ORD-02",
           "--device", "cpu", "--store", str(store), "--undecided-ok"]
    assert main(run) == 0  # an error row, stored
    capsys.readouterr()
    db = sqlite3.connect(store)
    db.execute("UPDATE verdicts SET native = '{not json'")
    db.commit()
    db.close()
    assert main(["report", "--store", str(store)]) == 2
    _one_line(capsys, "not a readable results store (a stored verdict does not parse: "
                      "JSONDecodeError")
    assert main(run) == 2  # resuming from it
    err = capsys.readouterr().err
    assert err.splitlines()[-1].startswith(f"kdiff: error: {store}: not a readable results "
                                           "store") and "Traceback" not in err, err


def _verdict(name: str, accept: bool | None) -> Verdict:
    status = {True: Status.PASS, False: Status.FAIL, None: Status.ERROR}[accept]
    return Verdict(Case(name, Path("p.py"), Path("c.py")), NativeVerdict(True, "kernelbench"),
                   {"ORD-02": GateResult("ORD-02", status, None,
                                         "kdiff error: boom" if accept is None else "")})


def test_progress_in_a_log_is_throttled_and_names_each_finding():
    out = io.StringIO()
    progress = Progress(100, out, tty=False)
    for i in range(100):
        progress(_verdict(f"k{i}", None if i == 41 else i != 7))
    progress.close()
    lines = out.getvalue().splitlines()
    status = [line for line in lines if "%]" in line]
    # one at the start, one per 5 kernels (EVERY_FRACTION), the last at 100/100
    assert len(status) == 1 + 20 and status[-1].startswith("[100/100 100%]")
    assert status[0].startswith("[  0/100   0%] started")
    assert [line for line in lines if "%]" not in line] == [
        "  k7: native accept, verifier REJECT (ORD-02)",
        "  k41: error: ORD-02: kdiff error: boom"]  # the rejected and the undecided kernel
    assert "\r" not in out.getvalue()


def test_progress_on_a_terminal_rewrites_one_line():
    out = io.StringIO()
    progress = Progress(3, out, tty=True, tick=None)
    for i in range(3):
        progress(_verdict(f"k{i}", True))
    progress.close()
    text = out.getvalue()
    assert text.count("\r") == 4 and text.endswith("\n") and text.count("\n") == 1
    assert "[3/3 100%]" in text


def test_progress_on_a_terminal_moves_while_a_kernel_is_judged():
    import time
    out = io.StringIO()
    progress = Progress(3, out, tty=True, tick=0.01)
    time.sleep(0.2)  # the first kernel still being judged
    progress.close()
    drawn = out.getvalue().count("\r")
    assert drawn > 2 and out.getvalue().endswith("\n")
    time.sleep(0.05)
    assert out.getvalue().count("\r") == drawn  # closed: no more redrawing


def test_progress_in_a_log_speaks_while_a_long_kernel_is_judged():
    """A log gets the status line again after `heartbeat` seconds without a line (a kernel
    that takes minutes on a device), and none once closed."""
    import time
    out = io.StringIO()
    progress = Progress(3, out, tty=False, heartbeat=0.05)
    time.sleep(0.4)  # the first kernel still being judged
    progress(_verdict("k0", True))
    progress.close()
    lines = out.getvalue().splitlines()
    assert len(lines) >= 4 and all(line.startswith("[0/3   0%] started") for line in lines[:-1])
    assert lines[-1].startswith("[1/3  33%]")
    time.sleep(0.15)
    assert out.getvalue().splitlines() == lines  # closed: silent


def test_status_line_gives_rate_and_time_left():
    assert status_line(10, 40, 300.0) == "[10/40  25%] 2 kernels/min, 15m00s left, 5m00s so far"
    assert status_line(40, 40, 7200.0) == "[40/40 100%] 0.333 kernels/min, 2h00m so far"


def test_run_prints_its_header_before_the_first_kernel(monkeypatch, capsys, tmp_path):
    from kdiff.commands import run as run_module
    monkeypatch.chdir(tmp_path)
    seen = []

    def judge(case, config, pm, preset):
        seen.append(capsys.readouterr().err)
        return _verdict(case.id, True)

    monkeypatch.setattr(run_module, "judge_one", judge)
    assert main(["run", "--bench", "kernelbench", "--root", str(CHECKOUT), "--runs",
                 str(CHECKOUT / "runs" / "run_a"), "--level", "1", "--gates", "ORD-02",
                 "--device", "cpu", "--jobs", "1"]) == 0
    first = seen[0]
    header = first.splitlines()[0]
    for words in ("bench kernelbench", f"root {CHECKOUT}", "runs ", "kernels 6",
                  "native check kernelbench (KernelBench at 423217d", "atol=rtol=1e-4",
                  "device cpu", "judges 1 at once", "gates ORD-02"):
        assert words in header, header
    assert "[0/6   0%] started" in first


def test_a_reader_that_leaves_early_gets_no_traceback():
    """`kdiff gates | head -1`: the pipe closes after the first line."""
    done = subprocess.run(f"{sys.executable} -m kdiff.commands.cli gates --verbose | head -1",
                          shell=True, capture_output=True, text=True, timeout=60)
    assert done.stdout.startswith("id") and "Traceback" not in done.stderr, done.stderr[-500:]


class _LaunchedThroughItsItem:
    """Triton 3.2 to 3.5's InterpretedFunction: a launch goes through `__getitem__`, and
    `run` is each instance's own."""

    def __init__(self) -> None:
        self.run = lambda *args, **kwargs: None


@pytest.mark.parametrize("shape", ["run per instance", "no patch scope"])
def test_a_triton_whose_interpreter_kdiff_cannot_read_is_refused_in_one_line(
        shape, monkeypatch, capsys):
    """Under Triton 3.2 to 3.5 every kernel of the shipped corpus errored on the CPU
    ("type object 'InterpretedFunction' has no attribute 'run'"): the worker records launches
    through the class's `run` and patches `tl` in a scope a launch restores. Such a Triton is
    refused at start, naming the version needed; this project's Triton is not."""
    triton = pytest.importorskip("triton")
    from triton.runtime import interpreter

    from kdiff.sandbox import interpreter_device
    assert interpreter_device.refusal() is None
    if shape == "run per instance":
        monkeypatch.setattr(interpreter, "InterpretedFunction", _LaunchedThroughItsItem)
    else:
        monkeypatch.delattr(interpreter, "_LangPatchScope")
    monkeypatch.setattr(triton, "__version__", "3.5.1")
    problem = str(FIXTURES / "core" / "scale_sum.py")
    assert main(["verify", "--problem", problem, "--candidate", problem, "--device", "cpu"]) == 2
    _one_line(capsys, "Triton 3.5.1 found; kdiff's CPU judging needs >= 3.6")
