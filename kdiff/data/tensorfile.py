"""Tensors, numbers, strings, None and dtypes in nested lists, tuples and dicts, as bytes: a
JSON header and the bytes of the tensors' storages. What the oracle cache keeps on disk and
what a judge and its worker send each other (kdiff.sandbox.protocol).

Tensors that share a storage share it again once read (a view, an output written into an
input), so that the judge judges aliasing from a reply itself. Reading runs none of the
bytes as code (no unpickler, as torch.load's weights_only also promises) and checks every
storage and view against the message before building it (the storages lie one after another
in the message, as written, so that building them copies at most the message's bytes); it is
five to ten times faster
than torch.load(weights_only=True), which took 0.5-0.9 ms per reply or oracle entry, some
5,000 replies and 3,400 entries in the default CPU run. Bytes that are not one, or are
damaged, raise TensorFileError; nothing of them is used.
"""
from __future__ import annotations

import json
import struct
from typing import Any

import torch

MAGIC = b"kdiff-tensors-2\n"
_LENGTH = struct.Struct("<Q")
# A header's bytes at most: parsed, JSON takes about ten times its size in objects (a 100 MiB
# header of storage entries, 1.1 GiB and 13 s), whatever the message's size cap. A reply's
# header lists its tensors, launches and provenance: kilobytes.
MAX_HEADER_BYTES = 16 << 20
DTYPES = {str(d).removeprefix("torch."): d for d in (
    torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.complex128,
    torch.complex64, torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8,
    torch.bool, torch.float8_e4m3fn, torch.float8_e5m2)}
# The header's marks of what JSON has no value for: {mark: payload}.
TENSOR, TUPLE, DTYPE = "__tensor__", "__tuple__", "__dtype__"
MARKS = frozenset({TENSOR, TUPLE, DTYPE})


class TensorFileError(ValueError):
    """Not a tensor file, or a damaged one."""


def dumps(obj: Any) -> bytes:
    """`obj` as bytes; TypeError for a value it cannot hold (an object, a dict with keys
    other than strings, a tensor that is not strided or not of DTYPES). Tensors on a device
    are stored as CPU copies."""
    return b"".join(dumps_parts(obj))


def dumps_parts(obj: Any) -> list[bytes | memoryview]:
    """dumps(obj) as the pieces it joins: the header, then each storage's bytes as a view of
    the storage itself, not a copy (written out as they are: os.writev). The views hold their
    storages; what writes them out must do so before anything writes into those."""
    storages: dict[tuple[int, int], int] = {}
    blobs: list[memoryview] = []
    tensors: list[dict[str, Any]] = []

    def tensor(t: torch.Tensor) -> dict[str, Any]:
        # What it reads as: a negated or conjugated view keeps its storage as it was and a
        # bit that says how to read it, which the storage's bytes alone would drop.
        t = t.detach().resolve_neg().resolve_conj()
        if t.layout is not torch.strided or t.is_quantized or t.dtype not in DTYPES.values():
            raise TypeError(f"cannot store a {t.layout} {t.dtype} tensor")
        t = t.cpu()
        storage = t.untyped_storage()
        key = (storage.data_ptr(), storage.nbytes())
        if key not in storages:
            storages[key] = len(blobs)
            blobs.append(memoryview(torch.empty(0, dtype=torch.uint8).set_(storage).numpy()))
        tensors.append({"storage": storages[key], "dtype": str(t.dtype).removeprefix("torch."),
                        "shape": list(t.shape), "stride": list(t.stride()),
                        "offset": t.storage_offset()})
        return {TENSOR: len(tensors) - 1}

    def tree(x: Any) -> Any:
        if isinstance(x, torch.Tensor):
            return tensor(x)
        if isinstance(x, dict):
            if not all(isinstance(k, str) for k in x) or MARKS & set(x):
                raise TypeError("dict keys must be strings other than the header's marks")
            return {k: tree(v) for k, v in x.items()}
        if isinstance(x, tuple):
            return {TUPLE: [tree(v) for v in x]}
        if isinstance(x, list):
            return [tree(v) for v in x]
        if isinstance(x, torch.dtype) and x in DTYPES.values():
            return {DTYPE: str(x).removeprefix("torch.")}
        if x is None or type(x) in (bool, int, float, str):
            return x
        raise TypeError(f"cannot store a {type(x).__name__}")

    header_tree = tree(obj)
    spans, offset = [], 0
    for blob in blobs:
        spans.append({"offset": offset, "nbytes": blob.nbytes})
        offset += blob.nbytes
    header = json.dumps({"tree": header_tree, "storages": spans, "tensors": tensors}).encode()
    return [MAGIC, _LENGTH.pack(len(header)), header, *blobs]


def is_tensorfile(data: bytes) -> bool:
    return data.startswith(MAGIC)


def loads(data: bytes) -> Any:
    """The object `data` holds: tensors on the CPU, each storage in memory of its own."""
    if not is_tensorfile(data) or len(data) < len(MAGIC) + _LENGTH.size:
        raise TensorFileError("not a tensor file")
    (length,) = _LENGTH.unpack_from(data, len(MAGIC))
    start = len(MAGIC) + _LENGTH.size
    if start + length > len(data):
        raise TensorFileError("the header runs past the end")
    if length > MAX_HEADER_BYTES:
        raise TensorFileError(f"a header of {length} bytes, at most {MAX_HEADER_BYTES} read")
    try:
        header = json.loads(data[start:start + length])
        body = memoryview(data)[start + length:]
        spans = _list(header, "storages")
        _check_consecutive(spans, len(body))
        storages = [_storage(span, body) for span in spans]
        tensors = [_tensor(spec, storages) for spec in _list(header, "tensors")]
        return _tree(header.get("tree"), tensors)
    except TensorFileError:
        raise
    except (ValueError, TypeError, KeyError, RecursionError, RuntimeError) as exc:
        raise TensorFileError(f"a damaged tensor file: {type(exc).__name__}: {exc}") from None


def _list(header: Any, name: str) -> list[Any]:
    if not isinstance(header, dict) or not isinstance(header.get(name), list):
        raise TensorFileError(f"no {name} table")
    return header[name]


def _int(x: Any) -> int:
    if type(x) is not int or x < 0:
        raise TensorFileError(f"not a size: {x!r}")
    return x


def _check_consecutive(spans: list[Any], body_bytes: int) -> None:
    """Each storage starts where the one before it ends (dumps writes them so), and the last
    ends inside the body: each storage is a copy of its bytes, so spans that overlap (a
    thousand naming one body's 8 MiB) would make a message of megabytes gigabytes."""
    end = 0
    for span in spans:
        if not isinstance(span, dict) or _int(span["offset"]) != end:
            raise TensorFileError(f"a storage not where the last one ended ({end}): {span!r}")
        end += _int(span["nbytes"])
    if end > body_bytes:
        raise TensorFileError(f"storages of {end} bytes in a body of {body_bytes}")


def _storage(span: Any, body: memoryview) -> torch.UntypedStorage:
    offset, nbytes = span["offset"], span["nbytes"]
    own = torch.frombuffer(bytearray(body[offset:offset + nbytes]), dtype=torch.uint8) \
        if nbytes else torch.empty(0, dtype=torch.uint8)
    return own.untyped_storage()


def _tensor(spec: Any, storages: list[torch.UntypedStorage]) -> torch.Tensor:
    dtype = DTYPES[spec["dtype"]]
    index = _int(spec["storage"])
    if index >= len(storages):
        raise TensorFileError(f"no storage {index}")
    shape = [_int(n) for n in spec["shape"]]
    stride = [_int(n) for n in spec["stride"]]
    offset = _int(spec["offset"])
    if len(stride) != len(shape):
        raise TensorFileError(f"{len(shape)} sizes and {len(stride)} strides")
    storage = storages[index]
    if 0 not in shape:  # the last element the view reaches lies inside its storage
        last = offset + sum((n - 1) * s for n, s in zip(shape, stride))
        if (last + 1) * dtype.itemsize > storage.nbytes():
            raise TensorFileError(f"a view past the end of its storage: {spec!r}")
    return torch.empty(0, dtype=dtype).set_(storage, offset if 0 not in shape else 0,
                                            shape, stride)


def _tree(x: Any, tensors: list[torch.Tensor]) -> Any:
    if isinstance(x, dict):
        if len(x) == 1 and (mark := next(iter(x))) in MARKS:
            value = x[mark]
            if mark == TENSOR:
                if type(value) is not int or not 0 <= value < len(tensors):
                    raise TensorFileError(f"no tensor {value!r}")
                return tensors[value]
            if mark == TUPLE:
                if not isinstance(value, list):
                    raise TensorFileError("a tuple that is not a list")
                return tuple(_tree(v, tensors) for v in value)
            return DTYPES[value]
        return {k: _tree(v, tensors) for k, v in x.items()}
    if isinstance(x, list):
        return [_tree(v, tensors) for v in x]
    return x
