"""Recorded calls: how the gold test called the operator, kept as a JSON template, and how a
materialised KernelBench problem replays it with fresh inputs.

A call is recorded as its arguments, each value encoded as JSON: numbers, strings, None
as they are; tuples, lists, dicts, dtypes and devices tagged (`{"tuple": [...]}`, ...); a
tensor as its template `{"tensor": {"shape", "dtype", "device", "min", "max", "values"}}`.
Replaying draws a fresh tensor per template from torch's global random state (the gates seed
it): floating values uniform over the recorded [min, max], so that a test's non-negative or
bounded inputs stay so. A floating tensor the test filled with one value c (`torch.ones`
weights, `torch.zeros` buffers and states) is drawn uniform over [0, 2c] (c's sign), or
standard normal for c = 0: TritonBench tests do not mark which inputs are fixed by the
contract, and a fixed one would leave the gates nothing to perturb.
A square matrix the test passed symmetric, or symmetric positive definite (a cholesky's or a
solve's input), is drawn so too (`matrix`).
Integer and boolean tensors (indices, lengths, masks) keep their recorded values, which
carry preconditions that fresh draws would break; where a gate changed their shape, they are
drawn from the recorded range instead. Every tensor size above 1 is named by a module
constant `DIM_<size>` of the materialised problem, so shape polymorphism scales equal sizes
together and broadcasting stays valid.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Callable

import torch

from kdiff.adapters.tritonbench.cpu import cuda_on_cpu
from kdiff.numerics.inputs import MatrixStructure, matrix_structure, with_structure

# Integer/boolean tensors up to this many elements keep their recorded values (beyond it,
# the template keeps only their range: a few thousand is what a CPU run handles anyway).
KEEP_VALUES_UP_TO = 4096


class Unrecordable(TypeError):
    """An argument kdiff cannot rebuild (a module, a generator, a custom object)."""


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _finite_range(t: torch.Tensor) -> tuple[float | None, float | None]:
    if t.numel() == 0 or t.is_complex():
        return None, None
    x = t.detach().to("cpu", torch.float64)
    if t.is_floating_point():
        x = x[torch.isfinite(x)]
        if x.numel() == 0:
            return None, None
    return float(x.min()), float(x.max())


def encode(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, torch.Tensor):
        lo, hi = _finite_range(value)
        spec = {"shape": list(value.shape), "dtype": _dtype_name(value.dtype),
                "device": str(value.device), "min": lo, "max": hi}
        if (not value.is_floating_point() and not value.is_complex()
                and value.numel() <= KEEP_VALUES_UP_TO):
            spec["values"] = value.detach().cpu().reshape(-1).tolist()
        # a constant fill (torch.ones) is symmetric by accident, not by contract
        structure = (matrix_structure([value.detach().cpu()], value.dtype)
                     if value.is_floating_point() and lo != hi else None)
        if structure is not None:
            spec["matrix"] = structure.value
        return {"tensor": spec}
    if isinstance(value, torch.dtype):
        return {"dtype": _dtype_name(value)}
    if isinstance(value, torch.device):
        return {"device": str(value)}
    if isinstance(value, (tuple, list)):  # torch.Size is a tuple
        return {"tuple" if isinstance(value, tuple) else "list": [encode(v) for v in value]}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"dict": {k: encode(v) for k, v in value.items()}}
    raise Unrecordable(f"an argument of type {type(value).__name__}")


def tensor_specs(value: Any) -> list[dict]:
    """The tensor templates inside an encoded value, in argument order."""
    if isinstance(value, dict):
        if "tensor" in value:
            return [value["tensor"]]
        inner = value.get("tuple") or value.get("list") or list(value.get("dict", {}).values())
        return [s for v in inner for s in tensor_specs(v)]
    return []


def call_specs(call: dict) -> list[dict]:
    return tensor_specs({"list": [*call["args"], *call["kwargs"].values()]})


def dims(call: dict) -> list[int]:
    """The distinct tensor sizes above 1 of a call: its shape constants."""
    return sorted({d for spec in call_specs(call) for d in spec["shape"] if d > 1})


def _without_values(value: Any) -> Any:
    """An encoded value with its floating tensors' ranges left out."""
    if isinstance(value, dict):
        if "tensor" in value:
            spec = value["tensor"]
            return {"tensor": {k: v for k, v in spec.items() if k not in ("min", "max")}
                    if "values" not in spec else spec}
        return {k: _without_values(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_values(v) for v in value]
    return value


def template_key(call: dict) -> str:
    """What a replay keeps of a call: equal for calls that differ only in floating values."""
    return json.dumps(_without_values({"args": call["args"], "kwargs": call["kwargs"]}),
                      sort_keys=True)


def _shown(value: Any) -> str:
    if not isinstance(value, dict):
        return repr(value)
    (tag, inner), = value.items()
    if tag == "tensor":
        return f"{inner['dtype']}{inner['shape']}"
    if tag in ("tuple", "list"):
        items = ", ".join(_shown(v) for v in inner)
        return f"({items})" if tag == "tuple" else f"[{items}]"
    if tag == "dict":
        return "{" + ", ".join(f"{k!r}: {_shown(v)}" for k, v in inner.items()) + "}"
    return str(inner)


def describe(call: dict, limit: int = 100) -> str:
    """One line: the call as written, tensors as dtype[shape] (`f(float32[10, 20], dim=1)`)."""
    parts = [_shown(a) for a in call["args"]]
    parts += [f"{k}={_shown(v)}" for k, v in call["kwargs"].items()]
    text = f"{call['function']}({', '.join(parts)})"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _draw(spec: dict, sizes: dict[str, int]) -> torch.Tensor:
    shape = [sizes.get(f"DIM_{d}", d) if d > 1 else d for d in spec["shape"]]
    dtype = getattr(torch, spec["dtype"])
    lo, hi = spec["min"], spec["max"]
    if "values" in spec and shape == spec["shape"]:
        return torch.tensor(spec["values"], dtype=dtype).reshape(shape)
    if dtype == torch.bool:
        return torch.rand(shape) < 0.5
    if not (dtype.is_floating_point or dtype.is_complex):
        lo, hi = int(lo or 0), int(hi or 0)
        return torch.randint(lo, hi + 1, shape, dtype=dtype)
    if dtype.is_complex or lo is None or lo == hi == 0:
        return torch.randn(shape, dtype=dtype)
    if lo == hi:
        lo, hi = min(0.0, 2 * lo), max(0.0, 2 * lo)
    x = lo + (hi - lo) * torch.rand(shape, dtype=torch.float64)
    structure = MatrixStructure(spec["matrix"]) if "matrix" in spec else None
    return with_structure(x, structure).to(dtype)


def make_inputs(call: dict, sizes: dict[str, int] | None = None) -> list[torch.Tensor]:
    """Fresh tensors for every tensor argument of the call (the problem's `get_inputs()`)."""
    return [_draw(spec, sizes or {}) for spec in call_specs(call)]


def _decode(value: Any, tensors: list[torch.Tensor]) -> Any:
    if not isinstance(value, dict):
        return value
    (tag, inner), = value.items()
    if tag == "tensor":
        return tensors.pop(0)
    if tag == "float":
        return float(inner)
    if tag == "dtype":
        return getattr(torch, inner)
    if tag == "device":
        return torch.device(inner)
    if tag == "tuple":
        return tuple(_decode(v, tensors) for v in inner)
    if tag == "list":
        return [_decode(v, tensors) for v in inner]
    return {k: _decode(v, tensors) for k, v in inner.items()}


def rebuild(call: dict, tensors: tuple[torch.Tensor, ...]) -> tuple[list, dict]:
    """The call's arguments with `tensors` (in `make_inputs` order) in the tensor places."""
    queue = list(tensors)
    args = [_decode(v, queue) for v in call["args"]]
    kwargs = {k: _decode(v, queue) for k, v in call["kwargs"].items()}
    return args, kwargs


def _tensors_in(value: Any) -> list[torch.Tensor]:
    if value is None:  # an optional output not produced (`return y, None`)
        return []
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (bool, int, float)):
        return [torch.tensor(value)]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors_in(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors_in(v)]
    raise TypeError(f"the function returned a {type(value).__name__}")


class FunctionModel(torch.nn.Module):
    """A TritonBench function as a KernelBench model: `forward(*tensors)` calls it as the
    recorded call did, with these tensors. Its outputs are the tensors it returns (nested
    tuples, lists and dicts flattened, Nones dropped); a function that returns None works in
    place, and its outputs are then its tensor arguments after the call (copies, so that
    nothing aliases an input)."""

    def __init__(self, function: Callable[..., Any], call: dict) -> None:
        super().__init__()
        self.function = function
        self.call = call

    def forward(self, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        args, kwargs = rebuild(self.call, tensors)
        with cuda_on_cpu():
            out = self.function(*args, **kwargs)
        if out is None:
            return tuple(t.clone() for t in tensors)
        return tuple(_tensors_in(out))


def load_function(path: Path, name: str, role: str) -> Callable[..., Any]:
    """`name` from the code in `path`, loaded as a fresh module. TritonBench code is written
    for a CUDA device: without one, it is imported inside `cuda_on_cpu()`, and Triton runs
    through its interpreter in this process from now on (a CPU worker starts that way; the
    judge's own process, which runs the gold reference, does not, and Triton decides at
    decoration and import time, so the switch cannot be scoped to this import; without a
    device nothing else could run a Triton kernel here anyway)."""
    from kdiff.data.problem import LoadError, load_module
    if not torch.cuda.is_available():
        os.environ["TRITON_INTERPRET"] = "1"
    with cuda_on_cpu():
        module = load_module(path, role)
    function = getattr(module, name, None)
    if not callable(function):
        raise LoadError(f"{path}: the code defines no function `{name}`")
    return function
