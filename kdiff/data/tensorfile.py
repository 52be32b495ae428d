"""A file of tensors, numbers, strings and None in nested lists and dicts: a JSON header and
the tensors' bytes. What the oracle cache keeps on disk.

Reading one runs no code of the file's (no unpickler, as torch.load's weights_only also
promises) and is ten times faster than torch.load's: the default CPU run reads some 3,400
oracle entries of a few kB, 0.6-0.9 ms each through torch.load(weights_only=True). A file
that is not one, or is damaged, raises TensorFileError; nothing of it is used.
"""
from __future__ import annotations

import json
import struct
from typing import Any

import torch

MAGIC = b"kdiff-tensors-1\n"
_LENGTH = struct.Struct("<Q")
DTYPES = {str(d).removeprefix("torch."): d for d in (
    torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.complex128,
    torch.complex64, torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8,
    torch.bool, torch.float8_e4m3fn, torch.float8_e5m2)}
TENSOR = "__tensor__"  # the header's mark of a tensor: {"__tensor__": its index}


class TensorFileError(ValueError):
    """Not a tensor file, or a damaged one."""


def dumps(obj: Any) -> bytes:
    """`obj` as a tensor file; its tensors are stored as contiguous CPU copies."""
    tensors: list[torch.Tensor] = []

    def tree(x: Any) -> Any:
        if isinstance(x, torch.Tensor):
            tensors.append(x.detach().cpu().contiguous())
            return {TENSOR: len(tensors) - 1}
        if isinstance(x, dict):
            if TENSOR in x or not all(isinstance(k, str) for k in x):
                raise TypeError("dict keys must be strings other than the tensor mark")
            return {k: tree(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [tree(v) for v in x]
        if x is None or isinstance(x, (bool, int, float, str)):
            return x
        raise TypeError(f"cannot store a {type(x).__name__}")

    header_tree = tree(obj)
    specs, offset = [], 0
    for t in tensors:
        nbytes = t.numel() * t.element_size()
        specs.append({"dtype": str(t.dtype).removeprefix("torch."), "shape": list(t.shape),
                      "offset": offset, "nbytes": nbytes})
        offset += nbytes
    header = json.dumps({"tree": header_tree, "tensors": specs},
                        allow_nan=True).encode()
    body = b"".join(t.reshape(-1).view(torch.uint8).numpy().tobytes() for t in tensors)
    return MAGIC + _LENGTH.pack(len(header)) + header + body


def loads(data: bytes) -> Any:
    """The object a tensor file holds (tensors on the CPU, in memory of their own)."""
    if not data.startswith(MAGIC) or len(data) < len(MAGIC) + _LENGTH.size:
        raise TensorFileError("not a tensor file")
    (length,) = _LENGTH.unpack_from(data, len(MAGIC))
    start = len(MAGIC) + _LENGTH.size
    try:
        header = json.loads(data[start:start + length])
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TensorFileError(f"unreadable header: {exc}") from None
    body = bytearray(data[start + length:])
    if not isinstance(header, dict) or not isinstance(header.get("tensors"), list):
        raise TensorFileError("no tensor table")
    tensors = [_tensor(spec, body) for spec in header["tensors"]]

    def tree(x: Any) -> Any:
        if isinstance(x, dict):
            if set(x) == {TENSOR}:
                index = x[TENSOR]
                if not isinstance(index, int) or not 0 <= index < len(tensors):
                    raise TensorFileError(f"no tensor {index!r}")
                return tensors[index]
            return {k: tree(v) for k, v in x.items()}
        if isinstance(x, list):
            return [tree(v) for v in x]
        return x

    return tree(header.get("tree"))


def _tensor(spec: Any, body: bytearray) -> torch.Tensor:
    try:
        dtype = DTYPES[spec["dtype"]]
        shape = [int(n) for n in spec["shape"]]
        offset, nbytes = int(spec["offset"]), int(spec["nbytes"])
    except (KeyError, TypeError, ValueError):
        raise TensorFileError(f"a malformed tensor entry: {spec!r}") from None
    numel = 1
    for n in shape:
        if n < 0:
            raise TensorFileError(f"a negative size in {shape}")
        numel *= n
    if nbytes != numel * dtype.itemsize or offset < 0 or offset + nbytes > len(body):
        raise TensorFileError(f"a tensor entry outside the file: {spec!r}")
    if numel == 0:
        return torch.empty(shape, dtype=dtype)
    raw = torch.frombuffer(body, dtype=torch.uint8, count=nbytes, offset=offset)
    return raw.view(dtype).reshape(shape).clone()
