"""Framing between the judge and a candidate's worker process.

A message is an 8-byte length followed by a tensor file (kdiff.data.tensorfile: a JSON
header and the storages' bytes), or a `torch.save` payload for what one cannot hold. A worker
runs untrusted code: the judge reads a tensor file, which runs none of its bytes as code, or
a `torch.save` payload with `weights_only=True` (an unrestricted unpickler would let the
worker execute code in the judge). Replies therefore hold only tensors, numbers, strings,
lists, tuples, dicts and None.

What a reply costs the judge is bounded before anything in it is used: the bytes it announces,
and the bytes its tensors cover once materialised (a view that repeats one element 2^29 times
is a few hundred bytes on the wire and 2 GiB in a comparison). The judge also reads storage
sharing from a reply itself (`shared_storage`): tensors that share storage in the worker share
it in the payload.
"""

from __future__ import annotations

import fcntl
import io
import operator
import os
import select
import struct
import time
from dataclasses import dataclass
from typing import Any, Callable

import torch

from kdiff.data import tensorfile

_HEADER = struct.Struct("<Q")
MAX_MESSAGE = 8 << 30  # a reply larger than this is a hostile or broken worker
IOV_MAX = os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") else 16  # buffers per writev
# Both pipes hold this much (F_SETPIPE_SZ, where the system allows it): a 1 MiB output crosses
# in one write, not sixteen of 64 KiB each waiting for the reader to wake (widen_pipe).
PIPE_BYTES = 1 << 20


class ChannelClosed(Exception):
    """The other side went away (crash, exit, kill)."""


class MessageRefused(ChannelClosed):
    """A message announced as larger than the reader accepts: nothing of it is read."""


class ChannelTimeout(Exception):
    """No complete reply arrived within the deadline."""


def encode(obj: Any) -> list[bytes | memoryview]:
    """A tensor file (kdiff.data.tensorfile) behind its length, as the pieces write_all
    writes out (the tensors' bytes as views of their storages, not copies); a `torch.save`
    payload for what one cannot hold."""
    try:
        parts = tensorfile.dumps_parts(obj)
    except TypeError:
        buf = io.BytesIO()
        torch.save(obj, buf)
        parts = [buf.getvalue()]
    return [_HEADER.pack(sum(memoryview(p).nbytes for p in parts)), *parts]


def decode(data: bytes, trusted: bool) -> Any:
    if tensorfile.is_tensorfile(data):
        return tensorfile.loads(data)
    return torch.load(
        io.BytesIO(data), weights_only=not trusted, map_location="cpu" if not trusted else None
    )


def write_all(fd: int, parts: list[bytes | memoryview]) -> None:
    """Writes `parts` (encode's) out in order, as few system calls as the pipe takes."""
    views = [v for v in (memoryview(p).cast("B") for p in parts) if v.nbytes]
    first = 0  # the first view not yet written whole
    while first < len(views):
        try:
            n = os.writev(fd, views[first : first + IOV_MAX])
        except (BrokenPipeError, OSError) as exc:
            raise ChannelClosed(str(exc)) from None
        while n:
            if n >= views[first].nbytes:
                n -= views[first].nbytes
                first += 1
            else:
                views[first], n = views[first][n:], 0


def widen_pipe(fd: int) -> None:
    """The pipe of `fd` made PIPE_BYTES large, where the system allows it (a user past
    /proc/sys/fs/pipe-user-pages-soft keeps the default: slower, not wrong)."""
    try:
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (OSError, AttributeError):
        pass


@dataclass
class Overdue:
    """What to do, once, where a message is not whole `after` seconds into its read."""

    after: float
    then: Callable[[], None]


class _Watch:
    def __init__(self, overdue: Overdue | None) -> None:
        self.at = None if overdue is None else time.monotonic() + overdue.after
        self.then = None if overdue is None else overdue.then

    def wait(self, deadline: float) -> float:
        """How long to wait for data before this watch or the deadline comes."""
        now = time.monotonic()
        return deadline - now if self.at is None else max(0.0, min(deadline, self.at) - now)

    def passed(self) -> bool:
        """Calls `then` where its time has come (once); whether it did."""
        if self.at is None or time.monotonic() < self.at:
            return False
        then, self.at, self.then = self.then, None, None
        then()
        return True


def _read_exact(fd: int, n: int, deadline: float | None, watch: _Watch) -> bytes:
    chunks, got = [], 0
    while got < n:
        if deadline is not None:
            if deadline - time.monotonic() <= 0:
                raise ChannelTimeout()
            ready, _, _ = select.select([fd], [], [], watch.wait(deadline))
            if not ready:
                if watch.passed() or time.monotonic() < deadline:
                    continue
                raise ChannelTimeout()
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            raise ChannelClosed("end of stream")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def tensors_in(obj: Any) -> list[torch.Tensor]:
    """Every tensor in a message (nested in lists, tuples and dicts)."""
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, dict):
        obj = list(obj.values())
    if isinstance(obj, (list, tuple)):
        return [t for item in obj for t in tensors_in(item)]
    return []


def materialised_bytes(obj: Any) -> int:
    """The bytes a message's tensors cover element by element (what a copy or a comparison
    of each allocates), whatever their storage holds."""
    return sum(t.numel() * t.element_size() for t in tensors_in(obj))


def read_message(fd: int, timeout: float | None, trusted: bool, limit: int = MAX_MESSAGE,
                 overdue: Overdue | None = None) -> Any:
    """One message; a header announcing more than `limit` bytes is refused before anything
    is buffered, and an untrusted message whose tensors cover more than `limit` bytes once
    materialised (stride-0 or overlapping views) is refused before any of them is used.
    `overdue` (with a `timeout`): called while the message is not whole that long into it."""
    limit = min(limit, MAX_MESSAGE)
    deadline = None if timeout is None else time.monotonic() + timeout
    watch = _Watch(overdue)
    (size,) = _HEADER.unpack(_read_exact(fd, _HEADER.size, deadline, watch))
    if size > limit:
        raise MessageRefused(f"a message of {size} bytes announced, at most {limit} accepted")
    message = decode(_read_exact(fd, size, deadline, watch), trusted)
    if not trusted and (covered := materialised_bytes(message)) > limit:
        raise MessageRefused(
            f"a message of {size} bytes whose tensors cover {covered} bytes "
            f"(views repeating their storage), at most {limit} accepted"
        )
    return message if trusted else encodable(message)


def encodable(obj: Any) -> Any:
    """`obj` with every string in it (dict keys too) made encodable: a lone surrogate, which
    a JSON header may carry (an exception's message of "\\ud800"), replaced. Otherwise it
    reaches the verdict and the store, and printing, writing or reporting either raised."""
    if isinstance(obj, str):
        return obj.encode("utf-8", "replace").decode("utf-8")
    if isinstance(obj, dict):
        return {encodable(k): encodable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(encodable(v) for v in obj)
    return obj


def storage_span(t: torch.Tensor) -> tuple[int, int]:
    st = t.untyped_storage()
    return st.data_ptr(), st.data_ptr() + st.nbytes()


def spans_overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1] and a[1] > a[0] and b[1] > b[0]


# Outputs up to this many elements are compared element by element; larger ones whose spans
# meet are taken to overlap (a copy of their offsets costs what a comparison of them does).
EXACT_OVERLAP_ELEMENTS = 1 << 24


def _byte_offsets(t: torch.Tensor) -> torch.Tensor:
    """Where each element of `t` starts, in bytes from its storage's start."""
    offsets = torch.full((), t.storage_offset(), dtype=torch.int64)
    for d, (size, stride) in enumerate(zip(t.shape, t.stride())):
        shape = [1] * t.dim()
        shape[d] = size
        offsets = offsets + (torch.arange(size, dtype=torch.int64) * stride).reshape(shape)
    return offsets.reshape(-1) * t.element_size()


def _elements_overlap(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two tensors sharing a storage address a byte in common: views a split (a fused
    QKV projection's q, k, v) makes share a storage and none of its elements."""
    if not spans_overlap(storage_span(a), storage_span(b)):
        return False
    if a.element_size() != b.element_size() or max(a.numel(), b.numel()) > EXACT_OVERLAP_ELEMENTS:
        return True
    return bool(torch.isin(_byte_offsets(a), _byte_offsets(b)).any())


def shared_storage(outputs: list[torch.Tensor], inputs: list[Any]) -> list[str]:
    """Every storage an output shares with an input or another output (where they address an
    element in common), read from the tensors of one decoded payload (each storage in it is
    one allocation here, shared by every tensor that shared it in the worker)."""
    found = []
    in_spans = [(i, storage_span(x)) for i, x in enumerate(inputs) if isinstance(x, torch.Tensor)]
    out_spans = [storage_span(o) for o in outputs]
    for j, span in enumerate(out_spans):
        for i, ispan in in_spans:
            if spans_overlap(span, ispan):
                found.append(f"output {j} shares storage with input {i}")
        for k in range(j):
            if _elements_overlap(outputs[j], outputs[k]):
                found.append(f"output {j} shares storage with output {k}")
    return found


class MalformedReply(ValueError):
    """A reply without the structure its request calls for."""


@dataclass
class CallReply:
    """A worker's answer to `call`: the outputs and the inputs as they are after the call, from
    one payload, which outputs lie in the storage of an earlier call's still alive (the
    worker keeps the last call's alive through every call alike), and how many outputs of
    earlier calls still alive changed since they were handed out (`written`): the worker's
    word, as the payload is."""

    outputs: list[torch.Tensor]
    inputs_after: list[torch.Tensor | None]
    reused: list[int]
    seconds: float
    written: int

    @classmethod
    def parse(cls, reply: dict[str, Any], inputs_sent: int) -> "CallReply":
        try:
            parsed = cls(
                list(reply["outputs"]),
                list(reply["inputs_after"]),
                list(reply["reused"]),
                float(reply["seconds"]),
                operator.index(reply["written"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise MalformedReply(f"malformed reply to `call`: {exc!r}") from None
        if not all(isinstance(t, torch.Tensor) for t in parsed.outputs) or not all(
            t is None or isinstance(t, torch.Tensor) for t in parsed.inputs_after
        ):
            raise MalformedReply("malformed reply to `call`: not tensors")
        if not all(type(j) is int and 0 <= j < len(parsed.outputs) for j in parsed.reused):
            raise MalformedReply("malformed reply to `call`: `reused` names no output")
        if parsed.written < 0:
            raise MalformedReply("malformed reply to `call`: `written` is negative")
        if len(parsed.inputs_after) != inputs_sent:
            raise MalformedReply(
                f"malformed reply to `call`: {len(parsed.inputs_after)} "
                f"inputs back, {inputs_sent} sent"
            )
        return parsed

    @property
    def aliases(self) -> list[str]:
        found = shared_storage(self.outputs, self.inputs_after) + [
            f"output {j} shares storage with an output of an earlier call" for j in self.reused
        ]
        if self.written:
            found.append(
                f"{self.written} output(s) of earlier calls, still held, changed after "
                f"they were handed out (written by this call or by work left running)"
            )
        return found
