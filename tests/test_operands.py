"""kdiff.numerics.operands: the oracle's flattening of an op's arguments gives torch's pytree
leaves, in torch's order, and puts them back as they were."""

import collections

import pytest
import torch
from torch.utils._pytree import tree_flatten

from kdiff.numerics.operands import flatten

x, y = torch.ones(2, 3), torch.zeros(3)

TREES = [
    x,
    (x,),
    [x, y],
    ((x, [2, 3]), {}),  # view(x, [2, 3])
    (([x, y, None], 0), {}),  # cat, an index's optional tensors
    ((x, 1.5), {"alpha": 2, "out": y}),
    ((x, torch.Size([3, 2])), {"dtype": torch.float64, "device": torch.device("cpu")}),
    ((x,), {"memory_format": torch.contiguous_format, "layout": torch.strided}),
    ((x, "tanh", 1 + 2j, True), {}),
    ((), {}),
    (x, y),  # a result of two tensors
    # a node torch's pytree registers that the few types here leave to it
    ((x, collections.OrderedDict(a=y)), {}),
    ((x, torch.return_types.max((x, y))), {}),
]


@pytest.mark.parametrize("tree", TREES, ids=range(len(TREES)))
def test_leaves_and_order_are_torch_pytrees(tree):
    leaves, spec = flatten(tree)
    expected, torch_spec = tree_flatten(tree)
    assert len(leaves) == len(expected)
    assert all(a is b for a, b in zip(leaves, expected))
    rebuilt = spec.unflatten(leaves)
    assert type(rebuilt) is type(tree)
    assert str(tree_flatten(rebuilt)[1]) == str(torch_spec)


def test_unflatten_puts_new_leaves_in_place():
    leaves, spec = flatten(((x, [2, 3]), {"alpha": 2}))
    args, kwargs = spec.unflatten([y, 4, 5, 6])
    assert args[0] is y and args[1] == [4, 5] and type(args[1]) is list
    assert kwargs == {"alpha": 6}
