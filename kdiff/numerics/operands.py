"""An op's operands and results as a flat list of leaves and back: what torch's pytree does
(tree_flatten, TreeSpec.unflatten), for the few container types aten's arguments hold, at a
fraction of its cost. The oracle's trace flattens each op's arguments and results several
times (the finite differences' shifted operands, the alternatives, the moved integers):
torch's generic pytree was a quarter of the Mamba-3 reference's trace on the CPU.

The leaves and their order are torch's: a tuple, a list or a torch.Size is a node of its
items, a dict of its values in insertion order, anything else listed in `_SCALARS` or a
tensor is a leaf. Any other value (a namedtuple, an OrderedDict, a type registered with torch's
pytree) hands the whole tree to torch's own."""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._pytree import tree_flatten

_SEQUENCES = (tuple, list, torch.Size)
_SCALARS = frozenset(
    {
        int,
        float,
        bool,
        complex,
        str,
        type(None),
        torch.dtype,
        torch.device,
        torch.layout,
        torch.memory_format,
    }
)


class _Unknown(Exception):
    """A value whose flattening torch's pytree decides (a type outside the few above)."""


class Spec:
    """How to put leaves back into the tree they came from (TreeSpec.unflatten's role)."""

    __slots__ = ("_shape",)

    def __init__(self, shape: Any) -> None:
        # None: a leaf; (type, [shapes]): a sequence; (dict, keys, [shapes]): a dict
        self._shape = shape

    def unflatten(self, leaves: list) -> Any:
        return _build(self._shape, iter(leaves))


def _shape(x: Any, leaves: list) -> Any:
    if isinstance(x, torch.Tensor) or type(x) in _SCALARS:
        leaves.append(x)
        return None
    kind = type(x)
    if kind in _SEQUENCES:
        return kind, [_shape(item, leaves) for item in x]
    if kind is dict:
        return dict, list(x), [_shape(v, leaves) for v in x.values()]
    raise _Unknown


def _build(shape: Any, leaves: Any) -> Any:
    if shape is None:
        return next(leaves)
    if shape[0] is dict:
        return {k: _build(s, leaves) for k, s in zip(shape[1], shape[2])}
    return shape[0]([_build(s, leaves) for s in shape[1]])


def flatten(tree: Any) -> tuple[list, Any]:
    """(leaves, spec) as torch's tree_flatten gives them; spec.unflatten(leaves) rebuilds."""
    if isinstance(tree, torch.Tensor):
        return [tree], _LEAF
    leaves: list = []
    try:
        return leaves, Spec(_shape(tree, leaves))
    except _Unknown:
        return tree_flatten(tree)


_LEAF = Spec(None)
