"""The format of the oracle cache and of the judge's messages: what goes in comes out, storage
shared as it was, and bytes that are not one are refused before anything of them is used."""
from __future__ import annotations

import json
import struct

import pytest
import torch

from kdiff.data.tensorfile import (
    DTYPES,
    MAGIC,
    MAX_HEADER_BYTES,
    TENSOR,
    TensorFileError,
    dumps,
    loads,
)


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
             "shape": (2, (3, 4)), "dtype": torch.bfloat16, "cotangents": None, "note": "x"}
    loaded = loads(dumps(entry))
    assert _same(entry, loaded)
    assert loaded["reference"][0].stride() == (1, 4)  # the view as it was
    a, b = loaded["values"]
    assert a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr()  # their own


def test_shared_storage_is_shared_again_and_only_it():
    x = torch.arange(12.0)
    view, other = x[3:7], torch.arange(4.0)
    loaded = loads(dumps([x, view, x.view(3, 4).t(), other]))
    storages = [t.untyped_storage().data_ptr() for t in loaded]
    assert storages[0] == storages[1] == storages[2] != storages[3]
    assert loaded[1].storage_offset() == 3 and torch.equal(loaded[1], view)
    loaded[0][4] = -1.0
    assert float(loaded[1][1]) == -1.0


def _file(header: dict, body: bytes) -> bytes:
    text = json.dumps(header).encode()
    return MAGIC + struct.pack("<Q", len(text)) + text + body


@pytest.mark.parametrize("damage", ["not one", "cut in the header", "cut in the storages",
                                    "an unknown dtype", "a view past its storage",
                                    "a storage past the end", "storages that overlap",
                                    "a header past its cap", "a deep header"])
def test_bytes_that_are_not_one_are_refused(damage: str):
    data = dumps({"values": [torch.arange(6.0)]})
    damaged = {"not one": b"PK\x03\x04" + data,
               "cut in the header": data[:30],
               "cut in the storages": data[:-1],
               # the replacements keep the header's length
               "an unknown dtype": data.replace(b'"float32"', b'"float99"'),
               "a view past its storage": data.replace(b'"shape": [6]', b'"shape": [7]'),
               "a storage past the end": data.replace(b'"nbytes": 24', b'"nbytes": 25'),
               # two storages, each a copy of the one body
               "storages that overlap": _file({
                   "tree": [{TENSOR: 0}, {TENSOR: 1}],
                   "storages": [{"offset": 0, "nbytes": 24}] * 2,
                   "tensors": [{"storage": i, "dtype": "float32", "shape": [6], "stride": [1],
                                "offset": 0} for i in range(2)]}, bytes(24)),
               "a header past its cap": _file({"tree": None, "storages": [], "tensors": [],
                                               "padding": "x" * MAX_HEADER_BYTES}, b""),
               "a deep header": MAGIC + struct.pack("<Q", 200_000) + b"[" * 100_000
               + b"]" * 100_000}[damage]
    assert damaged != data
    with pytest.raises(TensorFileError):
        loads(damaged)


def test_a_tensor_is_stored_as_it_reads_not_as_its_storage_holds():
    """A negated or conjugated view's storage holds the other sign; its bit is not stored."""
    x = torch.randn(3, 4)
    z = torch.randn(5, dtype=torch.complex64)
    neg, conj = loads(dumps([torch._neg_view(x), z.conj()]))
    assert torch.equal(neg, -x) and torch.equal(conj, z.conj().resolve_conj())


def test_only_plain_data_is_stored():
    with pytest.raises(TypeError):
        dumps({"values": [object()]})


@pytest.mark.parametrize("split", [False, True])
def test_a_message_crosses_a_pipe_whole_however_the_writes_split(split: bool,
                                                                 monkeypatch: pytest.MonkeyPatch):
    """protocol.encode's pieces (the storages as views, not copies) reach the reader whole,
    with more pieces than one writev takes (IOV_MAX), and when writev writes only part of
    what it is given (as a signal can make it: `split` caps each call at 4 kB, mid-piece);
    a storage shared by two tensors stays shared."""
    import os
    import threading

    from kdiff.sandbox import protocol
    if split:
        real = os.writev

        def partial(fd, buffers):
            room, cut = 4096, []
            for b in buffers:
                cut.append(memoryview(b)[:room])
                room -= cut[-1].nbytes
                if not room:
                    break
            return real(fd, cut)
        monkeypatch.setattr(protocol.os, "writev", partial)
    base = torch.randn(700_000)
    message = {"big": base, "view": base[10:20], "many": [torch.full((1,), float(i))
                                                         for i in range(protocol.IOV_MAX + 50)]}
    read_fd, write_fd = os.pipe()
    got = {}
    reader = threading.Thread(target=lambda: got.update(
        message=protocol.read_message(read_fd, 30, trusted=False)))
    reader.start()
    protocol.write_all(write_fd, protocol.encode(message))
    reader.join(30)
    os.close(read_fd)
    os.close(write_fd)
    assert _same(got["message"], message)
    assert got["message"]["view"].untyped_storage().data_ptr() == \
        got["message"]["big"].untyped_storage().data_ptr()
