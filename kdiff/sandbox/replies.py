"""The judge's check of its candidate's worker replies, before any gate or native check reads
them: a reply the judge cannot use (a sparse, quantized, nested or off-host tensor, a missing
field, a field of the wrong type) is the candidate's failure, `unusable_output`, not a kdiff
error that would leave the verdict open (or, for a quantized output, crash the judge)."""

from __future__ import annotations

import math
from typing import Any, Callable

import torch

from kdiff.sandbox.process import CandidateFailure, CandidateProcess


class UnusableOutput(CandidateFailure):
    """A successful reply of the candidate's worker that the judge cannot read: the
    candidate's failure, not kdiff's error (which would leave the verdict open)."""

    signature = "unusable_output"


def _tensors(*kinds: type) -> Callable[[Any], bool]:
    return lambda x: isinstance(x, torch.Tensor) or isinstance(x, kinds)


def _list_of(ok: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda x: isinstance(x, list) and all(ok(v) for v in x)


# What each field of a worker's reply must hold, wherever the judge reads it: `call` answers
# outputs and the inputs after the call (tensors; an input that is not a tensor comes back as
# None), which outputs lie in an earlier call's storage (indices), how many earlier outputs
# changed since (a count) and seconds; `memory` bytes;
# `launches` a list; `provenance` a dict (its fields: kdiff.sandbox.provenance.RecordedProvenance.parse).
_TENSORS = _list_of(_tensors())
REPLY_FIELDS: dict[str, Callable[[Any], bool]] = {
    "outputs": _TENSORS,
    "inputs_after": _list_of(_tensors(type(None))),
    "reused": _list_of(lambda x: type(x) is int),
    "written": lambda x: type(x) is int and x >= 0,
    "seconds": lambda x: type(x) in (int, float) and math.isfinite(x) and x >= 0,
    "bytes": lambda x: type(x) is int,
    "launches": lambda x: isinstance(x, list),
    "provenance": lambda x: isinstance(x, dict),
}


def unusable_tensor(t: torch.Tensor) -> str | None:
    """Why kdiff cannot judge `t` as an output, or None: it must be a dense, strided,
    unquantized tensor in host memory, as every comparison and the oracle expect."""
    if t.layout is not torch.strided:
        return f"layout {t.layout}"
    if t.is_quantized:
        return f"a quantized tensor ({t.dtype})"
    if t.is_nested:
        return "a nested tensor"
    if t.device.type != "cpu":
        return f"a tensor on device {t.device.type}"
    return None


def _walk(value: Any, where: str) -> None:
    if isinstance(value, torch.Tensor):
        why = unusable_tensor(value)
        if why is not None:
            raise UnusableOutput(f"{where} is {why}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _walk(v, f"{where}[{i}]")
    elif isinstance(value, dict):
        for k, v in value.items():
            _walk(v, f"{where}.{k}")


class CheckedReply(dict):
    """A reply whose missing fields are the candidate's failure when the judge reads them."""

    cmd = ""

    def __missing__(self, key: str) -> Any:
        raise UnusableOutput(f"the reply to `{self.cmd}` has no `{key}`")


def checked_reply(cmd: str, reply: dict[str, Any]) -> CheckedReply:
    """`reply` as the judge may read it: every field it holds of the type the judge expects
    (REPLY_FIELDS), every tensor in it dense and on the host; else UnusableOutput."""
    for key, ok in REPLY_FIELDS.items():
        if key in reply and not ok(reply[key]):
            raise UnusableOutput(
                f"the reply to `{cmd}` holds an unusable `{key}` ({type(reply[key]).__name__})"
            )
    try:
        for key, value in reply.items():
            _walk(value, key)
    except RecursionError:
        raise UnusableOutput(f"the reply to `{cmd}` is nested too deeply to read") from None
    checked = CheckedReply(reply)
    checked.cmd = cmd
    return checked


class CheckedCandidate(CandidateProcess):
    """The candidate's worker, each of its replies checked before any gate reads it."""

    def request(self, cmd: str, timeout: float | None = None, **payload: Any) -> CheckedReply:
        return checked_reply(cmd, super().request(cmd, timeout, **payload))
