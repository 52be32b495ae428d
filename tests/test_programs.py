"""A benchmark's script run warm (forked from the judge's zygote) does what `python SCRIPT`
in a fresh interpreter does: the same output, errors and exit status, __main__, sys.argv,
sys.path[0], atexit; and both are killed, children included, at the deadline."""
from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from typing import Any

import pytest

from kdiff.sandbox.process import SandboxLimits
from kdiff.sandbox.programs import run_python
from kdiff.sandbox.workerenv import confined_environment

WARM = SandboxLimits(start_timeout=60.0)
COLD = dataclasses.replace(WARM, warm_start=False)

SCRIPTS = {
    "prints": "import sys, torch\nprint('out', torch.tensor([1.5]).sum().item())\n"
              "print('err', file=sys.stderr)\n",
    "exits": "import sys\nprint('before')\nsys.exit(3)\n",
    "exits_with_text": "import sys\nsys.exit('why it stopped')\n",
    "raises": "print('before')\nraise ValueError('the script broke')\n",
    "misspells": "from typing import List\nx: Lst[int] = []\n",
    "main_and_argv": "import os, sys\nprint(__name__, os.path.basename(sys.argv[0]), "
                     "len(sys.argv), os.path.basename(__file__))\n",
    "imports_its_neighbour": "import neighbour\nprint(neighbour.VALUE)\n",
    "atexit": "import atexit\natexit.register(lambda: print('at exit'))\nprint('body')\n",
    "guarded": "def main():\n    print('guarded main')\n\nif __name__ == '__main__':\n    main()\n",
}


def _run(tmp_path: Path, name: str, limits: SandboxLimits, argv_of=lambda s: [str(s)]):
    folder = tmp_path / name / ("warm" if limits.warm_start else "cold")
    folder.mkdir(parents=True)
    script = tmp_path / name / f"{name}.py"
    script.write_text(SCRIPTS[name] if name in SCRIPTS else "")
    (tmp_path / name / "neighbour.py").write_text("VALUE = 'from the script folder'\n")
    run = run_python(argv_of(script), "cpu", limits, folder,
                     confined_environment(os.environ, "cpu", folder))
    # the confinement's own first line of stderr names what was applied, the same both ways
    err = "\n".join(ln for ln in run.stderr.splitlines()
                    if not ln.startswith("kdiff.sandbox.confine:"))
    return run.returncode, run.stdout, err


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_a_warm_script_runs_as_a_fresh_interpreter_runs_it(tmp_path, name):
    warm, cold = _run(tmp_path, name, WARM), _run(tmp_path, name, COLD)
    assert warm == cold
    assert warm[0] is not None


def test_a_module_runs_as_python_dash_m_runs_it(tmp_path):
    (tmp_path / "pkg_probe.py").write_text("import sys\nprint(__name__, sys.argv[1:])\n")
    argv = ["-m", "pkg_probe", "a", "b"]
    env_path = {"PYTHONPATH": str(tmp_path)}
    got = []
    for limits in (WARM, COLD):
        folder = tmp_path / ("warm" if limits.warm_start else "cold")
        folder.mkdir()
        env = {**confined_environment(os.environ, "cpu", folder), **env_path}
        got.append(run_python(argv, "cpu", limits, folder, env).stdout)
    assert got[0] == got[1] == "__main__ ['a', 'b']\n"


@pytest.mark.parametrize("limits", [WARM, COLD], ids=["warm", "cold"])
def test_a_script_and_its_children_are_killed_at_the_deadline(tmp_path, limits):
    marker = tmp_path / "child_alive"
    child = tmp_path / "child.py"
    child.write_text(f"import time\nwhile True:\n    open({str(marker)!r}, 'w').close()\n"
                     "    time.sleep(0.05)\n")
    script = tmp_path / "spins.py"
    script.write_text(f"import subprocess, sys, time\nsubprocess.Popen([sys.executable, "
                      f"{str(child)!r}])\nprint('started', flush=True)\nwhile True:\n"
                      "    time.sleep(0.1)\n")
    folder = tmp_path / "run"
    folder.mkdir()
    run = run_python([str(script)], "cpu", dataclasses.replace(limits, start_timeout=5.0), folder,
                     confined_environment(os.environ, "cpu", folder))
    assert run.returncode is None and run.stdout == "started\n"
    marker.unlink(missing_ok=True)
    time.sleep(0.5)
    assert not marker.exists(), "the script's child outlived the deadline"


def test_programs_run_side_by_side_through_one_zygote(tmp_path):
    """Threads share the judge's zygote (TritonBench records its gold tests that way, a
    thread each): while one waits for its program, another's program starts and ends. Here
    the first program waits for a file the test writes only once the second program has
    run; when a wait held the zygote, the second could not start until the first gave up."""
    import threading

    waiting, quick = tmp_path / "waiting", tmp_path / "quick"
    waiting.mkdir()
    quick.mkdir()
    (waiting / "w.py").write_text(
        "import os, time\n"
        "for _ in range(600):\n"
        "    if os.path.exists('go'):\n"
        "        print('went')\n"
        "        break\n"
        "    time.sleep(0.05)\n"
        "else:\n"
        "    print('never went')\n")
    (quick / "q.py").write_text("print('quick')\n")
    runs = {}

    def first():
        runs["waiting"] = run_python([str(waiting / "w.py")], "cpu", WARM, waiting,
                                     confined_environment(os.environ, "cpu", waiting))

    thread = threading.Thread(target=first)
    thread.start()
    time.sleep(2.0)  # the first program is running, its judge thread waiting for it
    second = run_python([str(quick / "q.py")], "cpu", WARM, quick,
                        confined_environment(os.environ, "cpu", quick))
    (waiting / "go").write_text("")  # the waiting program's own folder, which it may read
    thread.join(60)
    assert second.returncode == 0 and second.stdout.strip() == "quick"
    assert runs["waiting"].returncode == 0 and runs["waiting"].stdout.strip() == "went"


def test_a_judges_zygotes_are_forked_from_one_torch_import(tmp_path):
    """The workers' zygote (Triton interpreted) and RES-02's compiler zygote (Triton compiled)
    of one judge are forked from one base that has imported torch and no Triton: torch is
    imported once per judge, not once per zygote, and each zygote's Triton still takes its own
    mode (one zygote shared by both modes broke compiles)."""
    from kdiff.sandbox.process import zygote_for

    script = tmp_path / "mode.py"
    script.write_text("import triton\n@triton.jit\ndef kernel(x):\n    pass\n"
                      "print(type(kernel).__name__)\n")
    zygotes, modes = [], []
    for name, interpreted in (("worker", True), ("compiler", False)):
        folder = tmp_path / name
        folder.mkdir()
        env = confined_environment(os.environ, "cpu", folder)
        if not interpreted:
            del env["TRITON_INTERPRET"]
        modes.append(run_python([str(script)], "cpu", WARM, folder, env).stdout.strip())
        zygotes.append(zygote_for(env)._proc.pid)
    assert modes == ["InterpretedFunction", "JITFunction"]
    bases = {_parent(pid) for pid in zygotes}
    assert len(bases) == 1 and os.getpid() not in bases, (zygotes, bases)
    maps = Path(f"/proc/{bases.pop()}/maps").read_text()
    assert "libtorch_cpu" in maps and "libtriton" not in maps


def _parent(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(ln.split()[1] for ln in status.splitlines() if ln.startswith("PPid:")))


def test_a_zygote_that_died_is_forked_again_and_outlives_its_base(tmp_path):
    """A zygote killed is forked again from its base. A base killed leaves its zygotes
    serving and the judge's folder in place (they are the judge's, and end with it: cleaning
    up as their base died removed the folder of a judge still judging, and its next worker
    failed, FileNotFoundError)."""
    import signal

    from kdiff.sandbox.process import judge_folder, zygote_for

    script = tmp_path / "prints.py"
    script.write_text("print('ran')\n")

    def run(name: str) -> tuple[Any, int]:
        folder = tmp_path / name
        folder.mkdir()
        env = confined_environment(os.environ, "cpu", folder)
        assert run_python([str(script)], "cpu", WARM, folder, env).stdout == "ran\n"
        zygote = zygote_for(env)._proc
        return zygote, _parent(zygote.pid)

    zygote, base = run("first")
    assert base != os.getpid()  # forked by a base, not by this judge
    os.kill(zygote.pid, signal.SIGKILL)
    zygote.wait(timeout=10)  # seen to end by the judge
    again, same_base = run("zygote_killed")
    assert again.pid != zygote.pid and same_base == base
    os.kill(base, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while _parent(again.pid) == base and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.2)  # what its base's end would set off in it
    assert again.poll() is None and judge_folder().is_dir()
    still, _ = run("base_killed")
    assert still.pid == again.pid
