"""Running a Python program that runs untrusted code (a benchmark's script, `python SCRIPT`)
confined as a candidate's worker is, with a deadline: forked from the judge's zygote, which
has imported torch and Triton (kdiff.sandbox.zygote.run_python), or, where there is none, as
a fresh interpreter. A fresh interpreter spends most of a short script's run importing torch:
1.2-1.5 s on this project's CPU machine, several seconds on a GPU machine's.

What differs from a fresh interpreter: the modules the zygote imported (torch, Triton, kdiff's
worker) are not imported again, so a script that sets a variable they read at import time
(TRITON_INTERPRET, say) before importing them gets the zygote's setting. None of TritonBench-T's
answers of GPT-4o or Claude 3.5 Sonnet sets one (none writes os.environ).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from kdiff.sandbox.confine import Confinement
from kdiff.sandbox.process import SandboxLimits, confinement, zygote_for
from kdiff.sandbox.zygote import ZygoteUnavailable


@dataclass
class ProgramRun:
    returncode: int | None  # None: killed at the deadline
    stdout: str
    stderr: str


def run_python(argv: list[str], device: str, limits: SandboxLimits, workdir: Path,
               env: dict[str, str]) -> ProgramRun:
    """`python ARGV` (`-m MODULE ...` or `SCRIPT ...`) with environment `env`, confined in
    `workdir` (its working folder, the one it may write), killed with everything it started
    at limits.start_timeout from its start."""
    spec = confinement(device, limits, workdir, tuple(Path(a) for a in argv if os.path.isfile(a)))
    if limits.warm_start:
        try:
            return _warm(argv, spec, env, workdir, limits.start_timeout)
        except ZygoteUnavailable:
            pass  # a cold start below
    return _cold(argv, spec, env, workdir, limits.start_timeout)


def _warm(argv: list[str], spec: Confinement, env: dict[str, str], workdir: Path,
          timeout: float) -> ProgramRun:
    # Files, not pipes: nothing to drain while waiting, and the judge's own (anonymous), so
    # nothing the program started can write them after its end.
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        child = zygote_for(env).spawn_python(spec, env, str(workdir), argv, out.fileno(),
                                             err.fileno())
        try:
            code: int | None = child.wait(timeout)
        except subprocess.TimeoutExpired:
            _kill_group(child.pid)  # its own session (zygote._child): the program's children too
            child.wait()
            code = None
        out.seek(0)
        err.seek(0)
        return ProgramRun(code, out.read().decode(errors="replace"),
                          err.read().decode(errors="replace"))


def _cold(argv: list[str], spec: Confinement, env: dict[str, str], workdir: Path,
          timeout: float) -> ProgramRun:
    proc = subprocess.Popen(spec.command([sys.executable, *argv]),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, errors="replace", env=env,
                            cwd=str(workdir), start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        return ProgramRun(proc.returncode, out, err)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)  # the program's children too
        out, err = proc.communicate()
        return ProgramRun(None, out, err)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
