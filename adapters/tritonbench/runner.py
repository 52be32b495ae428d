"""Running TritonBench scripts (untrusted code) in a child process with a deadline, and, as
that child, running them with the operator's calls recorded.

The judge side: `run_script` runs a script as upstream does (`python SCRIPT`, standard output
captured); `record_calls` runs the gold code and its test with the test's calls of the gold
functions logged to JSON. Without a CUDA device, both run through this module's `__main__`
under `cuda_on_cpu()` with Triton's interpreter. Either way the child is confined as a
candidate's worker is, in a private temporary folder that is also its working directory, and
forked from the judge's zygote where there is one (kdiff.sandbox.programs: what `python
SCRIPT` does, without importing torch again).

The child side (`python -m kdiff.adapters.tritonbench.runner`):
    run SCRIPT                  execute SCRIPT as `__main__`
    record CODE TEST OUT.json   execute CODE, wrap the functions it defines that TEST names,
                                execute TEST in the same namespace, write the calls to OUT
A recorded call is one made by the test itself, not by one gold function inside another.
"""
from __future__ import annotations

import ast
import functools
import inspect
import json
import os
import re
import runpy
import shutil
import sys
import tempfile
import traceback
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from kdiff.sandbox.confine import CONTAINMENT_LINE
from kdiff.sandbox.process import SandboxLimits
from kdiff.sandbox.programs import run_python
from kdiff.sandbox.workerenv import confined_environment

# "RuntimeError: ...", "torch.AcceleratorError: CUDA error: ...": a traceback's last line
EXCEPTION_LINE = re.compile(r"[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit): ")


@dataclass
class ScriptResult:
    returncode: int | None  # None: killed at the deadline
    stdout: str
    stderr: str
    seconds_allowed: float

    @property
    def timed_out(self) -> bool:
        return self.returncode is None

    def failure(self) -> str:
        """One line: how the run failed, naming the exception where a traceback names one.
        torch's CUDA errors end in boilerplate lines ("Compile with `TORCH_USE_CUDA_DSA` to
        enable device-side assertions."), so the last line alone lost "CUDA error: out of
        memory", which kdiff.commands.run reads to judge such a case again alone."""
        if self.timed_out:
            return f"did not finish within {self.seconds_allowed:.0f} s"
        lines = [ln.strip() for ln in self.stderr.strip().splitlines()
                 if ln.strip() and not ln.startswith(CONTAINMENT_LINE)]
        raised = [ln for ln in lines if EXCEPTION_LINE.match(ln)]
        line = (raised or lines or [""])[-1][:300]
        return f"exit status {self.returncode}" + (f": {line}" if line else "")


def _child(args: list[str], device: str, limits: SandboxLimits, workdir: Path) -> ScriptResult:
    """One script in a child process confined the way a candidate's worker is (kdiff.sandbox.confine:
    writes only in `workdir`, memory and task caps, no network), killed at the sandbox's start
    timeout with everything it started."""
    # A candidate's worker's environment: no secret of the judge's, a user name for a uid
    # without a passwd entry (optimisers' and inductor's imports ask getpass.getuser())
    env = confined_environment(os.environ, device, workdir)
    if device != "cpu" and args[0] == "run":  # on the device: upstream's `python SCRIPT`
        argv = [args[1]]
    else:
        argv = ["-m", __name__, *args]
    run = run_python(argv, device, limits, workdir, env)
    return ScriptResult(run.returncode, run.stdout, run.stderr, limits.start_timeout)


def run_script(script: Path, device: str, limits: SandboxLimits) -> ScriptResult:
    with tempfile.TemporaryDirectory(prefix="kdiff-tritonbench-") as workdir:
        return _child(["run", str(script)], device, limits, Path(workdir))


def record_calls(code: Path, test: Path, out: Path, device: str, limits: SandboxLimits
                 ) -> ScriptResult:
    """Writes the recording to `out` (where the child wrote one: also when the test failed)."""
    with tempfile.TemporaryDirectory(prefix="kdiff-tritonbench-") as workdir:
        written = Path(workdir) / "calls.json"
        result = _child(["record", str(code), str(test), str(written)], device, limits,
                        Path(workdir))
        if written.is_file():
            shutil.copyfile(written, out)
        return result


# -- the child ------------------------------------------------------------------------------

def _as_main(path: Path) -> types.ModuleType:
    module = types.ModuleType("__main__")
    module.__file__ = str(path)
    sys.modules["__main__"] = module  # Triton's JIT looks a kernel's module up by name
    sys.path.insert(0, str(path.parent))
    sys.argv = [str(path)]
    return module


def _gold_function(value: Any) -> bool:
    """A plain function or a bound method (`f = MyFunction.apply`) of the gold code; not a
    class, not an import, and not a Triton kernel (launched through a grid, never called)."""
    if inspect.ismethod(value):
        owner = value.__self__
        return getattr(owner, "__module__", None) == "__main__"
    return inspect.isfunction(value) and value.__module__ == "__main__"


class Recorder:
    def __init__(self) -> None:
        self.calls: list[dict] = []
        self.depth = 0

    def wrap(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        from kdiff.adapters.tritonbench.calls import Unrecordable, encode

        @functools.wraps(function)
        def recorded(*args: Any, **kwargs: Any) -> Any:
            if self.depth == 0:
                try:
                    call = {"function": name, "args": [encode(a) for a in args],
                            "kwargs": {k: encode(v) for k, v in kwargs.items()}}
                except Unrecordable as exc:
                    call = {"function": name, "unrecordable": str(exc)}
                self.calls.append(call)
            self.depth += 1
            try:
                return function(*args, **kwargs)
            finally:
                self.depth -= 1
        return recorded


def _record(code_path: Path, test_path: Path, out_path: Path) -> None:
    code, test = code_path.read_text(encoding="utf-8"), test_path.read_text(encoding="utf-8")
    module = _as_main(code_path)
    recorder = Recorder()
    status = "ok"
    try:
        exec(compile(code, str(code_path), "exec"), module.__dict__)
        named = {n.id for n in ast.walk(ast.parse(test)) if isinstance(n, ast.Name)}
        for name in sorted(named):
            value = module.__dict__.get(name)
            if _gold_function(value):
                module.__dict__[name] = recorder.wrap(name, value)
        exec(compile(test, str(test_path), "exec"), module.__dict__)
    except BaseException as exc:
        status = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        raise
    finally:
        out_path.write_text(json.dumps({"status": status, "calls": recorder.calls}))


def main(argv: list[str]) -> None:
    from kdiff.adapters.tritonbench.cpu import cuda_on_cpu
    from kdiff.sandbox import interpreter_device
    interpreter_device.install()  # as in a candidate's worker: the same bits, sooner
    with cuda_on_cpu():
        if argv[0] == "run":
            script = Path(argv[1]).resolve()
            _as_main(script)
            runpy.run_path(str(script), run_name="__main__")
        elif argv[0] == "record":
            _record(*(Path(a).resolve() for a in argv[1:4]))
        else:
            raise SystemExit(f"usage: {__name__} run SCRIPT | record CODE TEST OUT")


if __name__ == "__main__":
    main(sys.argv[1:])
