"""A content digest of the values a call or an evaluation is made on: what the call cache and
the oracle cache key on. Two argument lists with the same digest are the same arguments to
any function of their values and layout: every tensor's dtype, shape, strides, storage
offset, device type and bytes, and every other value's type and repr, in order."""
from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Any

import torch


def _update(h: Any, x: Any) -> None:
    if isinstance(x, torch.Tensor):
        t = x.detach()
        # A view's start inside its storage is layout too (written only where it is not 0).
        at = f"@{t.storage_offset()}" if t.storage_offset() else ""
        h.update(f"T{t.dtype}{tuple(t.shape)}{t.stride()}{at}{t.device.type}\0".encode())
        h.update(t.cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    elif isinstance(x, (list, tuple)):
        h.update(f"{type(x).__name__}{len(x)}\0".encode())
        for item in x:
            _update(h, item)
    elif isinstance(x, dict):
        h.update(f"dict{len(x)}\0".encode())
        for k in sorted(x, key=repr):
            _update(h, k)
            _update(h, x[k])
    else:
        h.update(f"{type(x).__name__}:{x!r}\0".encode())


def digest(*values: Any) -> str:
    """32 hex digits naming `values` (see the module's docstring)."""
    h = hashlib.blake2b(digest_size=16)
    for v in values:
        _update(h, v)
    return h.hexdigest()


# Values that cannot change while held: an item of one of these types, held, keeps its value.
_IMMUTABLE = (int, float, bool, str, bytes, type(None), torch.dtype)


class DigestMemo:
    """digest() of argument lists, remembered: a list of the same tensor objects, none written
    since (their version counters: every in-place operation advances them), and equal values
    of immutable types, has the same digest. The lists remembered are held, so no tensor's id
    is reused while it is remembered; at most `size` of them. A list with any other item (a
    list, an object) is digested afresh each time."""

    def __init__(self, size: int = 4) -> None:
        self.size = size
        self._held: OrderedDict[tuple, tuple[list[Any], str]] = OrderedDict()

    def __call__(self, values: list[Any]) -> str:
        if not all(isinstance(v, (torch.Tensor, *_IMMUTABLE)) for v in values):
            return digest(values)
        key = tuple(("tensor", id(v), v._version) if isinstance(v, torch.Tensor)
                    else (type(v), v) for v in values)
        if key in self._held:
            self._held.move_to_end(key)
            return self._held[key][1]
        found = digest(values)
        self._held[key] = (list(values), found)
        if len(self._held) > self.size:
            self._held.popitem(last=False)
        return found
