"""A problem's sizes: how large its inputs are, and smaller sizes of the same problem.

KernelBench keeps a problem's sizes in module-level constants that get_inputs() and
get_init_inputs() read (ProblemModule.size_constants). Shapes are learned on the meta device,
so asking how large a size makes the inputs costs nothing.

`fit_sizes` scales a problem whose inputs or outputs are too large to judge with twelve gates
(upstream KernelBench level 1 draws inputs of up to 4.3e9 elements, and a transposed
convolution's output can be 20x its input; every gate call carries its inputs and outputs
between the judge and the worker, and the oracle holds them in float64) down to a smaller
instance of the same problem: the largest constant is halved, one at a time, while the
reference still builds and runs at the new sizes (on the meta device). Tied constants
(`tied_groups`) are halved together.
"""
from __future__ import annotations

import torch

from kdiff.data.problem import ProblemModule
from kdiff.numerics.inputs import draw_benchmark_inputs


def input_numels(problem: ProblemModule) -> list[int]:
    """Elements of each benchmark input at the problem's current sizes (a get_inputs() that
    needs real data is drawn for real)."""
    try:
        with torch.device("meta"):
            inputs = draw_benchmark_inputs(problem, 0)
    except Exception:  # noqa: BLE001 - e.g. indices computed from drawn values
        inputs = draw_benchmark_inputs(problem, 0)
    return [x.numel() for x in inputs if isinstance(x, torch.Tensor)]


def output_numels(problem: ProblemModule) -> list[int] | None:
    """Elements of each output of the reference at the problem's current sizes, run on the
    meta device; None when it does not run there (sizes outside the problem's class, or a
    reference that needs real values)."""
    try:
        with torch.device("meta"), torch.no_grad():
            model = problem.Model(*problem.get_init_inputs())
            out = model(*draw_benchmark_inputs(problem, 0))
    except Exception:  # noqa: BLE001 - sizes outside the problem's class
        return None
    outs = out if isinstance(out, (tuple, list)) else [out]
    return [o.numel() for o in outs if isinstance(o, torch.Tensor)]


def largest_numel(problem: ProblemModule) -> int:
    """Elements of the largest benchmark input or reference output at the current sizes."""
    return max(input_numels(problem) + (output_numels(problem) or []), default=0)


def tied_groups(constants: dict[str, int]) -> list[tuple[str, ...]]:
    """The constants that change together: those of equal value (a depthwise convolution's
    in_channels = out_channels, a square matrix's N = M), in first-seen order. Changing one of
    them alone can leave the problem's class (a depthwise convolution that is no longer
    depthwise) without the reference raising. Values 0 and 1 (a dim, a flag) tie nothing."""
    groups: dict[int, list[str]] = {}
    for name, value in constants.items():
        key = value if value > 1 else -len(groups) - 1  # its own group
        groups.setdefault(key, []).append(name)
    return [tuple(g) for g in groups.values()]


def fit_sizes(problem: ProblemModule, max_elements: int) -> dict[str, int]:
    """Size constants at which no benchmark input and no output of the reference has more
    than `max_elements` elements ({} when the benchmark's own sizes fit). Leaves the module's
    constants as they were. A halving is kept when it shrinks the largest tensor, or leaves it
    as large and shrinks the elements of all of them together (C = A.T @ B at M = K = N: no
    one constant shrinks the largest of A, B and C, two in turn do). When no halving does
    either, the smallest sizes reached are returned."""
    original = problem.size_constants()
    chosen: dict[str, int] = {}
    try:
        numels = input_numels(problem) + (output_numels(problem) or [])
        largest, total = max(numels, default=0), sum(numels)
        groups = tied_groups(original)
        while largest > max_elements:
            current = {**original, **chosen}
            for group in sorted(groups, key=lambda g: -current[g[0]]):
                if current[group[0]] < 2:
                    continue
                trial = {**chosen, **{n: (current[n] + 1) // 2 for n in group}}
                problem.set_sizes({**original, **trial})
                try:
                    inputs = input_numels(problem)
                except Exception:  # noqa: BLE001 - get_inputs() refuses these sizes
                    continue
                outputs = output_numels(problem)
                if outputs is None:
                    continue
                smaller, elements = max(inputs + outputs, default=0), sum(inputs + outputs)
                if smaller < largest or (smaller == largest and elements < total):
                    chosen, largest, total = trial, smaller, elements
                    break
            else:
                break  # no constant shrinks the inputs further
    finally:
        problem.set_sizes(original)
    return chosen
