"""SOL-ExecBench's (FlashInfer-Bench's) files, as NVIDIA/SOL-ExecBench at 8d2237d reads them
(`src/sol_execbench/core/data/definition.py`, `workload.py`, `solution.py`, `shapes.py`,
`dtypes.py`; docs/definition.md, workload.md, solution.md).

- definition.json: `name`; `axes`, each `const` (with `value`), `var` (bound by the workload,
  or read from the inputs' shapes) or `expr` (an arithmetic `expression` of other axes);
  `inputs` and `outputs` in order, each a `shape` (a list of axis names or digits; null for a
  scalar) and a `dtype`; `reference`, Python code with a top-level `run(*inputs)`; optionally
  `custom_inputs_entrypoint`, a function of that code that makes the inputs.
- workload.jsonl: one workload a line, `axes` (the var axes' values), `inputs` (per input:
  `random`, `scalar` with its `value`, `custom`, `safetensors`), `uuid`, and `tolerance`.
- solution_*.json: `name`, `spec` (`languages`, `entry_point` "FILE::FUNCTION",
  `destination_passing_style`, default true: the outputs are passed, allocated, after the
  inputs), `sources` (files by `path` and `content`).
"""
from __future__ import annotations

import ast
import json
import operator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

DTYPES = {
    "float64": torch.float64, "float32": torch.float32, "float16": torch.float16,
    "bfloat16": torch.bfloat16, "float8_e4m3fn": torch.float8_e4m3fn,
    "float8_e5m2": torch.float8_e5m2, "float4_e2m1": torch.float4_e2m1fn_x2,
    "float4_e2m1fn_x2": torch.float4_e2m1fn_x2, "int64": torch.int64, "int32": torch.int32,
    "int16": torch.int16, "int8": torch.int8, "bool": torch.bool,
}
# Languages whose entry point is a Python function; the others are built by upstream's
# compile server into an extension (cuda_cpp, cutlass, cudnn, cublas).
PYTHON_LANGUAGES = frozenset({"pytorch", "triton", "cute_dsl", "cutile", "cudnn_frontend"})


class LayoutError(Exception):
    """A file that cannot be read as SOL-ExecBench reads it (one line)."""


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple[str, ...] | None  # None: a scalar
    dtype: str
    description: str = ""

    @property
    def torch_dtype(self) -> torch.dtype:
        return DTYPES[self.dtype]


@dataclass(frozen=True)
class Definition:
    name: str
    axes: dict[str, dict]
    inputs: list[TensorSpec]
    outputs: list[TensorSpec]
    reference: str
    custom_inputs_entrypoint: str | None = None
    op_type: str | None = None

    @property
    def var_axes(self) -> list[str]:
        return [n for n, a in self.axes.items() if a.get("type") == "var"]

    def resolve(self, var_values: dict[str, int]) -> dict[str, int]:
        """Every axis's value, from the var axes' (Definition.get_resolved_axes_values)."""
        values = {n: int(a["value"]) for n, a in self.axes.items() if a.get("type") == "const"}
        values.update(var_values)
        for n, a in self.axes.items():
            if a.get("type") == "expr":
                values[n] = evaluate(a["expression"], values)
        return values

    def shape(self, spec: TensorSpec, axes: dict[str, int]) -> tuple[int, ...] | None:
        if spec.shape is None:
            return None
        return tuple(int(d) if d.isdigit() else axes[d] for d in spec.shape)

    def var_values_from(self, inputs: list[Any]) -> dict[str, int]:
        """The var axes' values read off the inputs' shapes (Definition.get_axes_values)."""
        found: dict[str, int] = {}
        for spec, x in zip(self.inputs, inputs):
            if spec.shape is None or not isinstance(x, torch.Tensor):
                continue
            for axis, size in zip(spec.shape, x.shape):
                if self.axes.get(axis, {}).get("type") == "var":
                    found.setdefault(axis, int(size))
        return found


@dataclass(frozen=True)
class Tolerance:
    """ToleranceSpec's fields and defaults (workload.py)."""

    max_atol: float = 1e-2
    max_rtol: float = 1e-2
    required_matched_ratio: float = 0.99
    max_error_cap: float | None = None
    allow_negative_inf: bool = False


@dataclass(frozen=True)
class Workload:
    axes: dict[str, int]
    inputs: dict[str, dict]
    uuid: str
    tolerance: Tolerance = field(default_factory=Tolerance)


@dataclass(frozen=True)
class Solution:
    path: Path
    name: str
    languages: tuple[str, ...]
    entry_file: str
    entry_function: str
    destination_passing_style: bool
    sources: dict[str, str]  # path -> content

    @property
    def python(self) -> bool:
        return set(self.languages) <= PYTHON_LANGUAGES


_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
              ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv,
              ast.Mod: operator.mod, ast.Pow: operator.pow, ast.UAdd: operator.pos,
              ast.USub: operator.neg}


def evaluate(expression: str, values: dict[str, int]) -> int:
    """An `expr` axis: numbers, axis names, + - * / // % ** and parentheses only."""
    def node_value(node: ast.AST) -> Any:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.Name):
            return values[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](node_value(node.left), node_value(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](node_value(node.operand))
        raise LayoutError(f"axis expression {expression!r}: {type(node).__name__} not allowed")
    value = node_value(ast.parse(expression, mode="eval").body)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int):
        raise LayoutError(f"axis expression {expression!r} is not an integer")
    return value


def _json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise LayoutError(f"{path}: not readable JSON: {exc}") from None
    if not isinstance(data, dict):
        raise LayoutError(f"{path}: not a JSON object")
    return data


def _specs(items: dict, path: Path, what: str) -> list[TensorSpec]:
    out = []
    for name, spec in items.items():
        if spec.get("dtype") not in DTYPES:
            raise LayoutError(f"{path}: {what} {name!r}: dtype {spec.get('dtype')!r} unknown")
        shape = spec.get("shape")
        out.append(TensorSpec(name, None if shape is None else tuple(map(str, shape)),
                              spec["dtype"], spec.get("description") or ""))
    return out


def read_definition(path: Path) -> Definition:
    data = _json(path)
    try:
        definition = Definition(
            data["name"], dict(data["axes"]), _specs(data["inputs"], path, "input"),
            _specs(data["outputs"], path, "output"), data["reference"],
            data.get("custom_inputs_entrypoint"), data.get("op_type"))
    except (KeyError, TypeError, AttributeError) as exc:
        raise LayoutError(f"{path}: missing or malformed field {exc}") from None
    entry = definition.custom_inputs_entrypoint
    if entry is not None and not str(entry).isidentifier():
        raise LayoutError(f"{path}: custom_inputs_entrypoint {entry!r} is no identifier")
    for spec in definition.inputs + definition.outputs:
        unknown = [d for d in spec.shape or () if not d.isdigit() and d not in definition.axes]
        if unknown:
            raise LayoutError(f"{path}: {spec.name!r} names undefined axes {unknown}")
    return definition


def read_workloads(path: Path) -> list[Workload]:
    return parse_workloads(path.read_text(encoding="utf-8"), path)


def parse_workloads(text: str, path: Path) -> list[Workload]:
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            tol = Tolerance(**item.get("tolerance", {}))
            out.append(Workload({k: int(v) for k, v in item["axes"].items()},
                                dict(item["inputs"]), str(item["uuid"]), tol))
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise LayoutError(f"{path}:{n}: not a workload: {exc}") from None
    if not out:
        raise LayoutError(f"{path}: no workloads")
    return out


def read_solution(path: Path) -> Solution:
    data = _json(path)
    try:
        spec = data["spec"]
        entry_file, _, function = spec["entry_point"].rpartition("::")
        sources = {s["path"]: s["content"] for s in data["sources"]}
        solution = Solution(path, data["name"], tuple(spec["languages"]), entry_file,
                            function, bool(spec.get("destination_passing_style", True)),
                            sources)
    except (KeyError, TypeError, AttributeError) as exc:
        raise LayoutError(f"{path}: missing or malformed field {exc}") from None
    bad = [p for p in sources if Path(p).is_absolute() or ".." in Path(p).parts]
    if bad or not entry_file or solution.entry_file not in sources:
        raise LayoutError(f"{path}: source paths {bad} or entry point "
                          f"{spec['entry_point']!r} not among its sources")
    return solution
