"""Whether a candidate's calls run Triton kernels: on the CPU, through kdiff's Triton
interpreter, whose arithmetic is an emulation (docs/cpu.md), not the device's own."""

from __future__ import annotations

import ast
from pathlib import Path

from kdiff.data.files import UnreadableFile, read_regular_file
from kdiff.judging.context import GateContext
from kdiff.sandbox.launches import MAX_RECORDED
from kdiff.sandbox.process import CandidateFailure, CandidateOverBudget, CandidateTimeout


def jit_kernel_names(path: Path) -> set[str]:
    """The functions the file, as the judge reads it, defines with a JIT decorator
    (`@triton.jit`, `@jit`, `@shape_jit`, with or without arguments)."""
    try:
        tree = ast.parse(read_regular_file(path))
    except (OSError, UnreadableFile, SyntaxError, ValueError):
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                called = (
                    target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
                )
                if called.endswith("jit"):
                    names.add(node.name)
    return names


def runs_triton(ctx: GateContext) -> bool:
    """Whether the candidate's calls go through Triton: its worker reports Triton launches
    (its own word) since the last `clear`, and one of them names a kernel that its file, as
    the judge reads it, defines with a JIT decorator. Asked after a call of the worker."""
    launches = ctx.candidate.request("launches").get("launches")
    named: dict[str, set[str]] = {}  # file -> the kernels named in its launches
    for item in launches[:MAX_RECORDED] if isinstance(launches, list) else []:
        launch = item.get("launch") if isinstance(item, dict) else None
        if isinstance(launch, dict):
            named.setdefault(str(launch.get("file")), set()).add(
                str(launch.get("qualname")).split(".")[-1]
            )
    return any(names & jit_kernel_names(Path(file)) for file, names in named.items())


def interpreter_may_have_run(ctx: GateContext, exc: CandidateFailure) -> bool:
    """Whether `exc` may be a call the interpreter was still computing: one that ran past the
    call timeout (not the case's budget spent) on the CPU, in which the worker wanted a CPU
    (kdiff.sandbox.runnable: the interpreter computes on the calling thread throughout)."""
    return (ctx.device == "cpu" and isinstance(exc, CandidateTimeout)
            and not isinstance(exc, CandidateOverBudget) and not exc.stalled)


def interpreter_too_slow(ctx: GateContext, exc: CandidateFailure) -> bool:
    """Whether `exc`, raised by a call at inputs larger than the benchmark's, is the Triton
    interpreter's time there: a call that ran past the call timeout (not the case's budget
    spent) on the CPU, where a kernel interpreted over many times the benchmark's elements
    can take longer than one call may, which says nothing of a GPU's time nor of the values
    judged; for a candidate that answers at the benchmark's inputs again now, through a Triton
    kernel. A kernel that hangs there fails there (this call raises), as does any on a GPU
    (CMP-03 lets off its held-out sizes so too, with what its own trials learned), and one
    whose worker stalled through the call (asleep or blocked, not computing: exc.stalled)."""
    if not interpreter_may_have_run(ctx, exc):
        return False
    with ctx.shared_calls(False):
        ctx.call(ctx.benchmark_inputs(0))
    return runs_triton(ctx)
