"""A content digest of the values a call or an evaluation is made on: what the call cache and
the oracle cache key on. Two argument lists with the same digest are the same arguments to
any function of their values and layout: every tensor's dtype, shape, strides, device type
and bytes, and every other value's type and repr, in order."""
from __future__ import annotations

import hashlib
from typing import Any

import torch


def _update(h: Any, x: Any) -> None:
    if isinstance(x, torch.Tensor):
        t = x.detach()
        h.update(f"T{t.dtype}{tuple(t.shape)}{t.stride()}{t.device.type}\0".encode())
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
