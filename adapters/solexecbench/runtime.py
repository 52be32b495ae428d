"""What the materialised SOL-ExecBench files call at run time: inputs made as the benchmark
makes them, outputs in the definition's order, and a solution's calling convention.

The rules are SOL-ExecBench's at 8d2237d (`src/sol_execbench/core/bench/io.py`: `gen_inputs`,
`_rand_tensor`, `_generate_heuristic_tensor`, `normalize_outputs`, `allocate_outputs`):
- inputs in the definition's order: a workload `scalar` is its value; `custom` inputs come
  from the reference's `custom_inputs_entrypoint(axes_and_scalars, device)`; `random` ones by
  the input's name first (below), else by dtype: float32/16/bf16 standard normal, fp8 a normal
  clamped to [-2, 2], bool and integers uniform (int8 over [-128, 128), wider ones over
  [-1024, 1024)); a random scalar is one such value; for a `sampling` op the input `probs`
  is softmaxed. `safetensors` inputs are not supported here.
- the name rules, for floating dtypes other than fp8/fp4: `norm_weight` or `*norm_weight`
  ones, `*norm_bias` zeros; a square `attention_mask`/`causal_mask` (or described as a causal
  attention mask) 0 with the dtype's minimum above the diagonal; binary masks 0/1; rope
  `cos`/`sin` of a clamped normal; `rstd`/`std`/`var`/`variance` |normal| + 0.1; SSM decays
  (`A` U(-1, -0.001), `A_log` U(-5, -1), `A_cumsum` cumsum of U(-0.1, 0), `g` U(-5, 0));
  softmax outputs (`attn_weights`, ...) a softmax of a normal; weight matrices (two or more
  dimensions, `*_proj`, `*_weight`, ...) normal / sqrt(fan_in).
- outputs: a dict by name, one tensor or scalar (one output), or a tuple/list of them, in
  the definition's order; numbers become tensors of the output's dtype;
- destination-passing style: the outputs are allocated as zeros of the definition's shapes
  and dtypes and passed after the inputs.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import torch

from kdiff.adapters.solexecbench.layout import Definition, TensorSpec, Workload

_LOW_FLOATS = (torch.float8_e4m3fn, torch.float8_e5m2, torch.float4_e2m1fn_x2)
_INT_RANGES = {torch.int8: (-128, 128), torch.int16: (-1024, 1024),
               torch.int32: (-1024, 1024), torch.int64: (-1024, 1024)}


def random_tensor(shape: tuple[int, ...], dtype: torch.dtype, device: Any) -> torch.Tensor:
    if dtype in (torch.float32, torch.float16, torch.bfloat16):
        return torch.randn(shape, dtype=dtype, device=device)
    if dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        return torch.randn(shape, device=device).clamp_(-2.0, 2.0).to(dtype)
    if dtype is torch.bool:
        return torch.randint(0, 2, shape, dtype=torch.bool, device=device)
    if dtype in _INT_RANGES:
        low, high = _INT_RANGES[dtype]
        return torch.randint(low, high, shape, dtype=dtype, device=device)
    raise ValueError(f"random inputs of dtype {dtype} are not supported here")


def _weightish(name: str) -> bool:
    suffixes = ("_weight", "_weights", "_proj", "_projs", "_proj_weight", "_proj_weights",
                "_weight_matrix")
    stripped = name.rstrip("0123456789")
    return name.endswith(suffixes) or name == "weight" or stripped == "weight" \
        or stripped.endswith(suffixes)


def _norm_named(name: str, suffix: str) -> bool:
    if name == f"norm{suffix}":
        return True
    if not name.endswith(suffix):
        return False
    prefix = name[: -len(suffix)]
    return prefix.endswith(("_norm", "_layernorm", "layernorm")) \
        or prefix.rstrip("0123456789").endswith(("norm", "layernorm"))


def _positive(name: str) -> bool:
    names = ("rstd", "std", "variance", "var")
    base = name.rstrip("0123456789")
    return name in names or name.endswith(("_rstd", "_std", "_variance", "_var")) \
        or base in names or base.endswith(("_rstd", "_std", "_var"))


def by_name(spec: TensorSpec, shape: tuple[int, ...], device: Any) -> torch.Tensor | None:
    """The name rules (None: none applies)."""
    name, dtype, desc = spec.name, spec.torch_dtype, spec.description.lower()
    if not dtype.is_floating_point or dtype in _LOW_FLOATS:
        return None
    if _norm_named(name, "_weight"):
        return torch.ones(shape, dtype=dtype, device=device)
    if _norm_named(name, "_bias"):
        return torch.zeros(shape, dtype=dtype, device=device)
    if len(shape) >= 2 and shape[-1] == shape[-2] and (
            name in ("attention_mask", "causal_mask")
            or ("attention mask" in desc and "causal" in desc)):
        mask = torch.zeros(shape, dtype=dtype, device=device)
        above = torch.triu(torch.ones(shape[-1], shape[-1], device=device), diagonal=1).bool()
        mask[..., above] = torch.finfo(dtype).min
        return mask
    if name in ("x_mask", "text_mask", "aspect_ratio_mask", "drop_mask", "attention_mask") or (
            name.endswith("_mask") and any(k in desc for k in (
                "binary", "{0, 1}", "0 or 1", "1.0 for valid", "0.0 for masked"))):
        return torch.randint(0, 2, shape, device=device).to(dtype)
    if name in ("cos", "sin", "cos_cached", "sin_cached", "rope_cos", "rope_sin"):
        t = torch.randn(shape, device=device).clamp_(-math.pi, math.pi)
        return (torch.cos(t) if name in ("cos", "cos_cached", "rope_cos") else torch.sin(t)).to(dtype)
    if _positive(name):
        return torch.randn(shape, dtype=dtype, device=device).abs() + 0.1
    if name in ("A", "A_log", "A_cumsum", "g"):
        if name == "A_cumsum":
            return torch.empty(shape, dtype=dtype, device=device).uniform_(-0.1, 0.0).cumsum(-1)
        low, high = {"A_log": (-5.0, -1.0), "A": (-1.0, -0.001), "g": (-5.0, 0.0)}[name]
        return torch.empty(shape, dtype=dtype, device=device).uniform_(low, high)
    if name in ("attn_weights", "attention_weights", "routing_weights") or (
            "softmax" in desc and "output" in desc):
        return torch.softmax(torch.randn(shape, device=device), dim=-1).to(dtype)
    if len(shape) >= 2 and _weightish(name):
        return torch.randn(shape, dtype=dtype, device=device) / math.sqrt(shape[-1])
    return None


def make_inputs(definition: Definition, workload: Workload, device: Any,
                custom: Callable[..., dict] | None) -> list[Any]:
    axes = definition.resolve(workload.axes)
    kinds = {n: s.get("type", "random") for n, s in workload.inputs.items()}
    made: dict[str, Any] = {}
    if any(k == "custom" for k in kinds.values()):
        if custom is None:
            raise ValueError("custom inputs, and the reference defines no "
                             f"{definition.custom_inputs_entrypoint!r}")
        scalars = {n: s["value"] for n, s in workload.inputs.items() if kinds[n] == "scalar"}
        made = custom({**axes, **scalars}, torch.device(device))
    out: list[Any] = []
    for spec in definition.inputs:
        kind = kinds.get(spec.name, "random")
        if kind == "scalar":
            out.append(workload.inputs[spec.name]["value"])
        elif kind == "custom":
            value = made[spec.name]
            out.append(value.to(device) if isinstance(value, torch.Tensor) else value)
        elif kind == "random":
            shape = definition.shape(spec, axes)
            if shape is None:
                out.append(random_tensor((), spec.torch_dtype, device).item())
                continue
            value = by_name(spec, shape, device)
            if value is None:
                value = random_tensor(shape, spec.torch_dtype, device)
            if definition.op_type == "sampling" and spec.name == "probs":
                value = torch.softmax(value, dim=-1)
            out.append(value)
        else:
            raise ValueError(f"input {spec.name!r}: {kind} inputs are not supported here")
    return out


def output_list(definition: Definition, result: Any, device: Any) -> list[torch.Tensor]:
    """`normalize_outputs`: the outputs in the definition's order."""
    specs = {s.name: s for s in definition.outputs}

    def tensor(name: str, v: Any) -> torch.Tensor:
        if isinstance(v, torch.Tensor):
            return v
        return torch.tensor(v, dtype=specs[name].torch_dtype, device=device)

    names = list(specs)
    if isinstance(result, dict):
        return [tensor(n, result[n]) for n in names]
    if isinstance(result, (torch.Tensor, int, float, bool)):
        if len(names) != 1:
            raise RuntimeError(f"one value returned, {len(names)} outputs defined")
        return [tensor(names[0], result)]
    if isinstance(result, (tuple, list)):
        if len(result) != len(names):
            raise RuntimeError(f"{len(result)} values returned, {len(names)} outputs defined")
        return [tensor(n, v) for n, v in zip(names, result)]
    raise RuntimeError(f"returned a {type(result).__name__}: must be a tensor, a number, a "
                       "tuple or list of them, or a dict by output name")


def allocate_outputs(definition: Definition, inputs: list[Any]) -> list[torch.Tensor]:
    """Destination-passing style: zeros of each output's shape and dtype, the axes read off
    the inputs. Where kdiff has cast every floating input to one working dtype (its gates
    judge fp32 and, in PRC-01, fp16/bf16), floating outputs take that dtype, as a
    return-value reference's do."""
    axes = definition.resolve(definition.var_values_from(inputs))
    device = next((x.device for x in inputs if isinstance(x, torch.Tensor)), "cpu")
    floats = [(s, x) for s, x in zip(definition.inputs, inputs)
              if isinstance(x, torch.Tensor) and x.is_floating_point()]
    working = {x.dtype for _, x in floats}
    cast = len(working) == 1 and all(x.dtype != s.torch_dtype for s, x in floats)
    out = []
    for spec in definition.outputs:
        dtype = working.copy().pop() if cast and spec.torch_dtype.is_floating_point \
            else spec.torch_dtype
        out.append(torch.zeros(definition.shape(spec, axes) or (), dtype=dtype, device=device))
    return out


class ReferenceModel(torch.nn.Module):
    """The definition's `run` (always called in return-value style)."""

    def __init__(self, definition: Definition, run: Callable[..., Any]) -> None:
        super().__init__()
        self.definition, self.run = definition, run

    def forward(self, *inputs: Any) -> list[torch.Tensor]:
        device = next((x.device for x in inputs if isinstance(x, torch.Tensor)), "cpu")
        return output_list(self.definition, self.run(*inputs), device)


class SolutionModel(ReferenceModel):
    """A solution's entry point in its own calling convention."""

    def __init__(self, definition: Definition, run: Callable[..., Any], dps: bool) -> None:
        super().__init__(definition, run)
        self.dps = dps

    def forward(self, *inputs: Any) -> list[torch.Tensor]:
        if not self.dps:
            return super().forward(*inputs)
        outputs = allocate_outputs(self.definition, list(inputs))
        self.run(*inputs, *outputs)
        return outputs
