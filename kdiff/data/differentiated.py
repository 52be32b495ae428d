"""Which inputs a backward problem (KDIFF_BACKWARD) is judged on the gradients of.

`KDIFF_BACKWARD = True` judges the gradient of every floating input. A tuple names the
differentiable ones, by Model.forward's parameter names or by get_inputs() positions:
`("q", "k", "v")` for attention whose float mask is a constant of the layer, `("x",)` for
RoPE, whose cos/sin are position tables. No honest kernel forms a gradient for such an
input, so none is asked of the candidate or judged; it is still an input of the forward,
drawn and varied by every gate as before. The gradients follow the outputs in get_inputs()
order, whatever the declaration's order.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from kdiff.data.problem import LoadError

DECLARATION = "KDIFF_BACKWARD"
FORM = (f"{DECLARATION} must be True or a non-empty tuple of Model.forward parameter names "
        f"or get_inputs() positions")


@dataclass(frozen=True)
class ForwardParameters:
    """The names get_inputs()'s values are passed to, position by position; `open_ended`
    where a *args takes the positions after them (those are named by position only)."""

    names: tuple[str, ...]
    open_ended: bool

    @classmethod
    def of(cls, model_class: type) -> ForwardParameters:
        try:
            signature = inspect.signature(model_class.forward)
        except (TypeError, ValueError):  # a builtin or C forward: positions only
            return cls((), True)
        params = list(signature.parameters.values())
        # A method's first parameter is the instance; a staticmethod has none.
        if not isinstance(inspect.getattr_static(model_class, "forward"), staticmethod):
            params = params[1:]
        positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        names = []
        for p in params:
            if p.kind not in positional:
                return cls(tuple(names), p.kind is inspect.Parameter.VAR_POSITIONAL)
            names.append(p.name)
        return cls(tuple(names), False)


def declares_backward(declared: Any) -> bool:
    """Whether a problem's KDIFF_BACKWARD asks for a VJP at all. Anything but False (or no
    declaration) does, and is resolved by differentiated_inputs: an empty tuple is an
    error there, not a forward-only problem."""
    return declared is not None and declared is not False


def floating_positions(inputs: list[Any]) -> tuple[int, ...]:
    """The positions of every floating tensor of `inputs`: what `KDIFF_BACKWARD = True`
    differentiates."""
    return tuple(i for i, x in enumerate(inputs) if _has_gradient(x))


def differentiated_inputs(declared: Any, parameters: ForwardParameters, inputs: list[Any],
                          path: Path) -> tuple[int, ...]:
    """The get_inputs() positions whose gradients are judged, ascending, for a declaration
    that asks for a VJP (declares_backward). `inputs` is one draw of get_inputs(). A
    declaration that names no floating input raises LoadError: one line naming `path` and
    the cause."""
    if declared is True:
        return floating_positions(inputs)
    named = (declared,) if isinstance(declared, str) else declared
    if not isinstance(named, (tuple, list)) or not named or not all(
            isinstance(n, (str, int)) and not isinstance(n, bool) for n in named):
        raise LoadError(f"{path}: {FORM}, not {declared!r}")
    positions = sorted({_position(n, parameters, len(inputs), path) for n in named})
    for i in positions:
        if not _has_gradient(inputs[i]):
            raise LoadError(f"{path}: {DECLARATION} names {_label(i, parameters)}, which is "
                            f"{_kind(inputs[i])}: only a floating tensor has a gradient")
    return tuple(positions)


def _position(name: str | int, parameters: ForwardParameters, count: int, path: Path) -> int:
    if isinstance(name, int):
        if not 0 <= name < count:
            raise LoadError(f"{path}: {DECLARATION} names position {name}, but get_inputs() "
                            f"gives {count} input(s) (positions 0 to {count - 1})")
        return name
    if name not in parameters.names:
        known = ", ".join(parameters.names) or "none by name"
        more = "; the inputs *args takes are named by position" if parameters.open_ended else ""
        raise LoadError(f"{path}: {DECLARATION} names {name!r}, which is not a parameter of "
                        f"Model.forward ({known}){more}")
    position = parameters.names.index(name)
    if position >= count:
        raise LoadError(f"{path}: {DECLARATION} names {name!r}, Model.forward's parameter "
                        f"{position}, but get_inputs() gives {count} input(s)")
    return position


def _has_gradient(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and x.is_floating_point()


def _label(i: int, parameters: ForwardParameters) -> str:
    return f"{parameters.names[i]!r} (input {i})" if i < len(parameters.names) else f"input {i}"


def _kind(x: Any) -> str:
    if isinstance(x, torch.Tensor):
        return f"a tensor of dtype {str(x.dtype).removeprefix('torch.')}"
    return f"not a tensor ({type(x).__name__})"
