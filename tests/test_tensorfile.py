"""The oracle cache's file format: what goes in comes out, and a file that is not one is
refused before anything of it is used."""
from __future__ import annotations

import pytest
import torch

from kdiff.data.tensorfile import DTYPES, TensorFileError, dumps, loads


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return (isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape
                and torch.equal(a.view(torch.uint8) if a.dtype.itemsize == 1 and
                                a.dtype.is_floating_point else a,
                                b.view(torch.uint8) if b.dtype.itemsize == 1 and
                                b.dtype.is_floating_point else b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b or (a != a and b != b)  # NaN


def test_an_oracle_entry_round_trips():
    torch.manual_seed(0)
    entry = {"values": [torch.randn(3, 5, dtype=torch.float64), torch.tensor(2.5)],
             "magnitudes": None, "depths": [4, 0], "peaks": [float("inf"), float("nan")],
             "reference": [torch.randn(4, 4).t(), torch.randn(0, 3), torch.tensor([True])],
             "every dtype": [torch.ones(2, dtype=d) for d in DTYPES.values()],
             "cotangents": None, "note": "text"}
    loaded = loads(dumps(entry))
    assert _same(entry, loaded)
    assert loaded["reference"][0].is_contiguous()  # stored as a contiguous copy
    a, b = loaded["values"]
    assert a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr()  # their own


@pytest.mark.parametrize("damage", ["not one", "cut in the header", "cut in the tensors",
                                    "an unknown dtype", "a tensor past the end"])
def test_a_file_that_is_not_one_is_refused(damage: str):
    data = dumps({"values": [torch.arange(6.0)]})
    damaged = {"not one": b"PK\x03\x04" + data,
               "cut in the header": data[:30],
               "cut in the tensors": data[:-1],
               "an unknown dtype": data.replace(b'"float32"', b'"float99"'),  # same length
               "a tensor past the end": data.replace(b'"offset": 0', b'"offset": 9')}[damage]
    with pytest.raises(TensorFileError):
        loads(damaged)


def test_only_plain_data_is_stored():
    with pytest.raises(TypeError):
        dumps({"values": [object()]})
