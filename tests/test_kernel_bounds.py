"""The shipped Triton kernels touch only their own tensors: every load, store and atomic of
the interpreter checked against the launch's arguments (interpreter_bounds), on the
benchmark's inputs and, for the recurrences, with a NaN that sends them down their
token-by-token fallback."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

os.environ["TRITON_INTERPRET"] = "1"  # before any kernel module decorates its kernels

import torch
from interpreter_bounds import bounds_checked

KERNELS = Path(__file__).resolve().parent.parent / "kernels"
CONTROLS = sorted(p for p in (KERNELS / "runs" / "controls").glob("*_kernel.py")
                  if "import triton" in p.read_text())
# (KernelBench root, run, problem, whether a non-finite input takes a fallback path): the
# Mamba-3 decode step (problem 3) is one kernel whatever its inputs.
RECURRENCES = [(KERNELS / "gdn" / "kernelbench", "chunked", n, True) for n in range(1, 6)] + \
              [(KERNELS / "mamba3" / "kernelbench", "triton", n, n != 3) for n in range(1, 4)]


def _module(path: Path):
    spec = importlib.util.spec_from_file_location(f"bounds_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _problem_of(candidate: Path, root: Path) -> Path:
    level, number = candidate.stem.split("_")[1], candidate.stem.split("_")[3]
    return next((root / "KernelBench" / f"level{level}").glob(f"{number}_*.py"))


def _run(problem: Path, candidate: Path, nan: bool = False) -> None:
    """The candidate on the problem's inputs (a NaN in the first float input's first element
    with `nan`), and its backward where the problem declares one."""
    spec, cand = _module(problem), _module(candidate)
    torch.manual_seed(0)
    inputs = spec.get_inputs()
    floats = [x for x in inputs if isinstance(x, torch.Tensor) and x.is_floating_point()]
    if nan:
        floats[0].view(-1)[0] = float("nan")
    backward = getattr(spec, "KDIFF_BACKWARD", False)
    if backward:
        inputs = [x.detach().requires_grad_() if any(x is f for f in floats) else x
                  for x in inputs]
    model = cand.ModelNew(*spec.get_init_inputs())
    with torch.set_grad_enabled(backward):
        out = model(*inputs)
        outs = [o for o in (out if isinstance(out, (tuple, list)) else [out])
                if isinstance(o, torch.Tensor) and o.requires_grad]
        if backward and outs:
            torch.autograd.grad(outs, [x for x in inputs if isinstance(x, torch.Tensor)
                                       and x.requires_grad],
                                [torch.ones_like(o) for o in outs], allow_unused=True)


# A kernel that loads a whole block whatever the length, stores masked: the load reads past
# the end of x (on a GPU: another allocation's bytes, or a fault).
UNMASKED_LOAD = '''
import torch
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x, y, n, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.store(y + o, tl.load(x + o{mask}), mask=o < n)


def copy(x):
    y = torch.empty_like(x)
    copy_kernel[(1,)](x, y, x.numel(), BLOCK=16)
    return y
'''


@pytest.mark.parametrize("mask, outside", [("", 6), (", mask=o < n", 0)],
                         ids=["unmasked load", "masked load"])
def test_the_check_sees_a_load_past_the_end_of_a_tensor(tmp_path: Path, mask: str,
                                                        outside: int):
    path = tmp_path / "copy.py"
    path.write_text(UNMASKED_LOAD.format(mask=mask))
    copy = _module(path).copy
    x = torch.arange(10.0)
    with bounds_checked() as log:
        y = copy(x)
    assert torch.equal(y, x)  # the value check alone accepts both
    assert log.checked["copy_kernel"] == 2
    assert sum(v.addresses for v in log.violations) == outside, log.violations


@pytest.mark.parametrize("candidate", CONTROLS, ids=[p.stem for p in CONTROLS])
def test_each_triton_control_stays_inside_its_tensors(candidate: Path):
    with bounds_checked() as log:
        _run(_problem_of(candidate, KERNELS), candidate)
    assert log.checked, "no interpreted access was checked"
    assert not log.violations, log.violations


@pytest.mark.parametrize("root, run, number, fallback", RECURRENCES,
                         ids=[f"{r.parent.name}-{n}" for r, _, n, _ in RECURRENCES])
def test_each_recurrence_stays_inside_its_tensors_on_both_paths(root: Path, run: str,
                                                                number: int, fallback: bool):
    candidate = next((root / "runs" / run).glob(f"level_3_problem_{number}_sample_0_kernel.py"))
    problem = _problem_of(candidate, root)
    with bounds_checked() as log:
        _run(problem, candidate)
        finite = log.checked.copy()
        _run(problem, candidate, nan=True)
    with_nan = log.checked - finite - finite  # what the NaN's call did beyond a finite call
    assert finite, "no interpreted access was checked"
    # The fallback kernels launch on every call and return at once unless flagged.
    assert bool(with_nan) == fallback, f"the NaN's path: {dict(finite)} then {dict(log.checked)}"
    assert not log.violations, log.violations
