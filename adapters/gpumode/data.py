"""What the materialised GPU MODE files share: loading a problem's sibling modules, and
carrying one `data` object (generate_input's tuple, list or dict of tensors and numbers)
through kdiff's calling convention, a flat list of inputs.

GPU MODE calls `ref_kernel(data)` and `custom_kernel(data)` with one structured argument;
kdiff's gates perturb, move and compare the inputs of `forward(*inputs)` one by one. So
`get_inputs()` returns `[structure, *leaves]`: the structure as a JSON string (an input no
gate perturbs, since it is no tensor) followed by the leaves, and `DataModel.forward` rebuilds
`data` from them before it calls the wrapped function.
"""
from __future__ import annotations

import importlib.abc
import importlib.util
import itertools
import json
import sys
import types
from pathlib import Path
from typing import Any, Callable

import torch

from kdiff.data.problem import LoadError, load_module

_counter = itertools.count()


class _SiblingFinder(importlib.abc.MetaPathFinder):
    """Resolves top-level imports of `NAME` to `folder/NAME.py`, as the harness's one working
    directory does (reference.py imports `task` and `utils` beside it)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def find_spec(self, name, path=None, target=None):
        file = self.folder / f"{name}.py"
        if path is None and "." not in name and file.is_file():
            return importlib.util.spec_from_file_location(name, file)
        return None


def load_with_siblings(path: Path, siblings: Path, role: str) -> types.ModuleType:
    """Executes `path` as a fresh module (kdiff.data.problem.load_module) while top-level imports
    of the `.py` files in `siblings` load fresh copies of them. The plain names (`task`,
    `utils`, `reference`) are generic and every problem has its own: they are visible in
    sys.modules only during the load, then whatever was there before is put back. (An import
    that runs later, inside a function body, is not resolved this way.)"""
    names = {p.stem for p in siblings.glob("*.py")}
    saved = {n: sys.modules.pop(n) for n in list(sys.modules) if n in names}
    finder = _SiblingFinder(siblings)
    sys.meta_path.insert(0, finder)
    try:
        return load_module(path, role)
    finally:
        sys.meta_path.remove(finder)
        for n in names:
            sys.modules.pop(n, None)
        sys.modules.update(saved)


def required(module: types.ModuleType, name: str, path: Path) -> Any:
    value = getattr(module, name, None)
    if value is None:
        raise LoadError(f"{path}: defines no `{name}`")
    return value


# -- structure ---------------------------------------------------------------------------

def flatten(data: Any) -> tuple[str, list[Any]]:
    """(structure, leaves): tuples, lists and dicts are structure (what the harness's
    `_clone_data` walks); everything else is a leaf."""
    leaves: list[Any] = []

    def walk(x: Any) -> Any:
        if isinstance(x, tuple):
            return ["tuple", [walk(v) for v in x]]
        if isinstance(x, list):
            return ["list", [walk(v) for v in x]]
        if isinstance(x, dict):
            return ["dict", [[k, walk(v)] for k, v in x.items()]]
        leaves.append(x)
        return len(leaves) - 1

    return json.dumps(walk(data)), leaves


def unflatten(structure: str, leaves: list[Any] | tuple[Any, ...]) -> Any:
    def build(node: Any) -> Any:
        if isinstance(node, int):
            return leaves[node]
        kind, items = node
        if kind == "tuple":
            return tuple(build(v) for v in items)
        if kind == "list":
            return [build(v) for v in items]
        return {k: build(v) for k, v in items}

    return build(json.loads(structure))


def clone(data: Any) -> Any:
    """The harness's `_clone_data`: every tensor cloned, the structure rebuilt."""
    structure, leaves = flatten(data)
    return unflatten(structure, [x.clone() if isinstance(x, torch.Tensor) else x
                                 for x in leaves])


def draw(generate_input: Callable[..., Any], args: dict[str, Any]) -> list[Any]:
    """get_inputs(): `generate_input(**args)` with its seed drawn from torch's global generator
    (which kdiff seeds per trial), flattened. The test's own seed would give every kdiff seed
    the same values, and the gates would take every input for a constant."""
    args = dict(args)
    if "seed" in args:
        args["seed"] = int(torch.randint(0, 2**31 - 1, (1,)))
    structure, leaves = flatten(generate_input(**args))
    return [structure, *leaves]


class DataModel(torch.nn.Module):
    """`forward(structure, *leaves)` calls `fn(data)`: `ref_kernel` (the problem's Model), as
    the harness calls it, on `data` itself; or `custom_kernel` (the candidate's ModelNew,
    `clone_data`), as the harness calls it, on `_clone_data(data)`. The submission owns its
    copy: it may write into it (the output buffers generate_input allocates are there to be
    written) and return it, and the gates see neither as a change to or an alias of their
    inputs, as the benchmark does not."""

    def __init__(self, fn: Callable[[Any], Any], clone_data: bool = False) -> None:
        super().__init__()
        self.fn, self.clone_data = fn, clone_data

    def forward(self, structure: str, *leaves: Any) -> Any:
        data = unflatten(structure, leaves)
        return self.fn(clone(data) if self.clone_data else data)
