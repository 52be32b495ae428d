"""TritonBench's own check, re-implemented from its evaluation scripts (thunlp/TritonBench at
603e28a, `EVAL/eval_{G,T}/0_call_acc.py` and `1_exe_acc.py`):

- call accuracy: the script made of the generated code (cleaned; for G reduced to imports and
  function definitions), a separator line and the gold test section is run with the
  interpreter; it passes when the exit status is 0. Upstream keeps only the scripts that pass;
- execution accuracy, over those kept scripts: the script's standard output must equal, as a
  string, that of the gold file run the same way. (Most gold tests print nothing: there the
  two accuracies coincide.)

Upstream runs both with no deadline; here each run is a child process confined as a
candidate's worker is, killed with its children at the sandbox's start timeout (a script
imports, compiles and runs a handful of calls). Without a CUDA device both run on the CPU under
`cuda_on_cpu()` and Triton's interpreter (`runner.py`).

Presets: `tritonbench` accepts when both accuracies pass (the verdict says which one
decided); `tritonbench-call` is call accuracy alone.
"""
from __future__ import annotations

import json
from pathlib import Path

from kdiff.adapters.tritonbench.materialise import write_atomic
from kdiff.adapters.tritonbench.runner import ScriptResult, run_script
from kdiff.data.model import Case, NativeVerdict
from kdiff.judging.native import NativeCheck
from kdiff.sandbox.process import SandboxLimits

PRESETS = {
    "tritonbench": "TritonBench call and execution accuracy: exit status 0, then stdout equal "
                   "to the gold run's",
    "tritonbench-call": "TritonBench call accuracy alone: exit status 0",
}


def gold_stdout(script: Path, device: str, limits: SandboxLimits) -> ScriptResult:
    """The gold file's run, once per gold file and device: a run that passed is cached beside
    it; one that failed is not (a device out of memory beside other judges, or killed at its
    deadline, is no property of the gold file), so the next case runs it again."""
    cached = script.with_name(f"stdout-{device}.json")
    if cached.is_file():
        data = json.loads(cached.read_text())
        return ScriptResult(data["returncode"], data["stdout"], data["stderr"],
                            limits.start_timeout)
    result = run_script(script, device, limits)
    if result.returncode == 0:
        write_atomic(cached, json.dumps({"returncode": result.returncode,
                                         "stdout": result.stdout, "stderr": result.stderr}))
    return result


def _first_difference(got: str, want: str) -> str:
    got_lines, want_lines = got.splitlines(), want.splitlines()
    for n, (g, w) in enumerate(zip(got_lines, want_lines), 1):
        if g != w:
            return f"line {n}: {g[:80]!r}, the gold run's {w[:80]!r}"
    return (f"{len(got_lines)} lines, the gold run's {len(want_lines)}"
            if len(got_lines) != len(want_lines) else "trailing whitespace")


def run_native(case: Case, preset: str, device: str, limits: SandboxLimits) -> NativeVerdict:
    verdict = NativeCheck(preset).verdict  # two stages, no trials
    script = Path(case.metadata["script"])
    call = run_script(script, device, limits)
    if call.returncode != 0:
        return verdict(False, f"call accuracy: fail ({call.failure()})")
    if preset == "tritonbench-call":
        return verdict(True, "call accuracy: pass (exit status 0)")
    gold = gold_stdout(Path(case.metadata["gold_script"]), device, limits)
    if gold.timed_out:
        return verdict(None, f"execution accuracy: the gold run {gold.failure()}")
    gold_note = "" if gold.returncode == 0 else f"; the gold run itself: {gold.failure()}"
    if call.stdout != gold.stdout:
        return verdict(False, "call accuracy: pass; execution accuracy: fail (stdout differs "
                       f"from the gold run's at {_first_difference(call.stdout, gold.stdout)})"
                       + gold_note)
    lines = len(gold.stdout.splitlines())
    return verdict(True, "call accuracy: pass; execution accuracy: pass (stdout equals the "
                   f"gold run's, {lines} line{'s' * (lines != 1)})" + gold_note)
