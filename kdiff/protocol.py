"""Framing between the judge and a candidate's worker process.

A message is an 8-byte length followed by a `torch.save` payload. The judge reads replies
with `weights_only=True`: a worker runs untrusted code, and an unrestricted unpickler would
let it execute code in the judge. Replies therefore hold only tensors, numbers, strings,
lists, tuples, dicts and None.
"""
from __future__ import annotations

import io
import os
import select
import struct
import time
from typing import Any

import torch

_HEADER = struct.Struct("<Q")
MAX_MESSAGE = 8 << 30  # a reply larger than this is a hostile or broken worker


class ChannelClosed(Exception):
    """The other side went away (crash, exit, kill)."""


class MessageRefused(ChannelClosed):
    """A message announced as larger than the reader accepts: nothing of it is read."""


class ChannelTimeout(Exception):
    """No complete reply arrived within the deadline."""


def encode(obj: Any) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    data = buf.getvalue()
    return _HEADER.pack(len(data)) + data


def decode(data: bytes, trusted: bool) -> Any:
    return torch.load(io.BytesIO(data), weights_only=not trusted, map_location="cpu"
                      if not trusted else None)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except (BrokenPipeError, OSError) as exc:
            raise ChannelClosed(str(exc)) from None
        view = view[n:]


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    chunks, got = [], 0
    while got < n:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ChannelTimeout()
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                raise ChannelTimeout()
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            raise ChannelClosed("end of stream")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_message(fd: int, timeout: float | None, trusted: bool,
                 limit: int = MAX_MESSAGE) -> Any:
    """One message; a header announcing more than `limit` bytes is refused before anything
    is buffered."""
    deadline = None if timeout is None else time.monotonic() + timeout
    (size,) = _HEADER.unpack(_read_exact(fd, _HEADER.size, deadline))
    if size > min(limit, MAX_MESSAGE):
        raise MessageRefused(f"a message of {size} bytes announced, at most "
                             f"{min(limit, MAX_MESSAGE)} accepted")
    return decode(_read_exact(fd, size, deadline), trusted)
