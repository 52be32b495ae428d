"""A CPU worker's inputs in memory the judge owns: a sealed memfd both map, so that what a
call leaves in its inputs is read by the judge itself, not taken from the worker's reply.

The judge writes each call's input storages into the arena (`InputArena.place`) and sends
their places; the worker builds its input tensors on its own mapping of them (`on_arena`), so
that the candidate computes on that memory; after the reply the judge reads its own mapping
(`InputArena.read`); the inputs a worker keeps across calls (CMP-02's) it overwrites there
itself between calls (`InputArena.write`). What the judge read stays with it until the
arena's next use of that memory, so that a write the worker makes after it replied (a
thread of the candidate's, left running) is found when the judge next looks
(`InputArena.written_since_read`), even one it undoes as the next request arrives. A worker that rewrites its reply
(kdiff.sandbox.worker's serialiser patched) can still send a pristine copy as its inputs, but
the arena holds what it left in them. To leave them pristine it must restore them before replying: then no caller sees them
changed either. The seals keep the worker from shrinking the file under the judge's mapping.

CUDA workers copy their inputs to the device, where the judge cannot look: there the inputs
after a call are the worker's word (its reply), as are aliasing and kept outputs everywhere.
"""
from __future__ import annotations

import fcntl
import mmap
import os
from typing import Any, Callable

import torch

# Virtual size at most: the file is sparse, and only what a call's inputs cover is ever
# touched by the judge or mapped by the worker. A worker may dirty the rest, charged to its
# memory cgroup; the file lives as long as that worker (InputArena is made for each start and
# closed when it ends), so what it holds is freed with it. Inputs larger go through the pipe.
ARENA_BYTES = 1 << 34
ALIGN = 64  # each storage on a cache line, as an allocator places it
_SEALS = getattr(fcntl, "F_SEAL_SHRINK", 2) | getattr(fcntl, "F_SEAL_GROW", 4) | \
    getattr(fcntl, "F_SEAL_SEAL", 1)
_ADD_SEALS = getattr(fcntl, "F_ADD_SEALS", 1033)


def _dtype(name: str) -> torch.dtype:
    dtype = getattr(torch, name.removeprefix("torch."), None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"not a dtype: {name!r}")
    return dtype


def _bytes_of(storage: torch.UntypedStorage) -> torch.Tensor:
    return torch.empty(0, dtype=torch.uint8).set_(storage)


class InputArena:
    """The judge's side: the memfd (passed to the worker it is made for) and its mapping. A
    call's inputs go after those a worker keeps across calls by name (`keep`), which stay
    until `release`; every call's inputs are here, so that none differs in where it lives."""

    def __init__(self, size: int = ARENA_BYTES) -> None:
        self.fd = os.memfd_create("", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.ftruncate(self.fd, size)
        fcntl.fcntl(self.fd, _ADD_SEALS, _SEALS)
        self.size = size
        self._map = mmap.mmap(self.fd, size)
        self._kept_end = 0  # the inputs kept across calls lie below
        # What the judge last read or wrote at each place still in use (its start -> the
        # place and a copy of its bytes), to compare with what the arena holds later. Bytes,
        # not tensors: a slice of the mapping is one memcpy and `==` one memcmp, where
        # torch's uint8 clone and torch.equal took 4x and 15-30x as long (4 MiB: 0.09 and
        # 0.21 ms against 0.38 and 3-6 ms on this machine's CPU), once per input per call.
        self._last_seen: dict[int, tuple[dict[str, Any], bytes]] = {}

    def place(self, inputs: list[Any], keep: bool = False
              ) -> list[dict[str, Any] | None] | None:
        """Writes the storages of `inputs`' CPU tensors into the arena, each once (tensors that
        share storage here share it in the worker); returns each input's place (None for what
        is not such a tensor), or None where they do not fit. With `keep` they stay until
        `release`, and later calls' inputs go after them."""
        places: list[dict[str, Any] | None] = []
        at: dict[int, tuple[int, int]] = {}
        end = self._kept_end
        self._forget_seen(end)  # the last call's inputs are overwritten below
        for x in inputs:
            if not isinstance(x, torch.Tensor) or x.device.type != "cpu" or x.layout != \
                    torch.strided or x.untyped_storage().nbytes() == 0:
                places.append(None)
                continue
            storage = x.untyped_storage()
            if storage.data_ptr() not in at:
                start = -(-end // ALIGN) * ALIGN
                if start + storage.nbytes() > self.size:
                    return None
                at[storage.data_ptr()] = (start, storage.nbytes())
                end = start + storage.nbytes()
            start, nbytes = at[storage.data_ptr()]
            places.append({"at": start, "nbytes": nbytes, "dtype": str(x.dtype),
                           "shape": list(x.shape), "stride": list(x.stride()),
                           "offset": x.storage_offset()})
        for x, place in zip(inputs, places):
            if place is not None:
                self._view(place).copy_(_bytes_of(x.untyped_storage()))
        if keep:
            self._kept_end = end
        return places

    def release(self) -> None:
        """The inputs kept across calls are no longer used: their room is the next call's."""
        self._kept_end = 0
        self._forget_seen(0)

    def write(self, places: list[dict[str, Any] | None], values: list[Any]) -> None:
        """`values` written over the placed inputs, in place, by the judge: the worker sees
        its tensors change as under a write through their memory (another kernel's, not
        torch's: no version counter of theirs moves), with no request it could intercept."""
        for target, value in zip(_tensors_at(places, lambda place: self._view(
                place).untyped_storage()), values):
            if target is not None and value is not None:
                target.copy_(value)
        self._remember(places)

    def read(self, places: list[dict[str, Any] | None]) -> list[torch.Tensor | None]:
        """The inputs as the arena holds them now (copies of their own, apart from the
        copies kept to compare with), None where not placed."""
        self._remember(places)
        return _tensors_at(places, lambda place: torch.frombuffer(
            bytearray(self._bytes(place)), dtype=torch.uint8).untyped_storage())

    def written_since_read(self) -> list[dict[str, Any]]:
        """The places whose bytes differ from what the judge last read or wrote there: the
        worker wrote them since."""
        return [place for place, seen in self._last_seen.values()
                if self._bytes(place) != seen]

    def _remember(self, places: list[dict[str, Any] | None]) -> None:
        for place in places:
            if place is not None:
                self._last_seen[place["at"]] = (place, self._bytes(place))

    def _bytes(self, place: dict[str, Any]) -> bytes:
        return self._map[place["at"]:place["at"] + place["nbytes"]]

    def _forget_seen(self, start: int) -> None:
        """The judge is about to write at `start` and above: what it saw there is gone."""
        self._last_seen = {at: seen for at, seen in self._last_seen.items() if at < start}

    def _view(self, place: dict[str, Any]) -> torch.Tensor:
        return torch.frombuffer(self._map, dtype=torch.uint8, count=place["nbytes"],
                                offset=place["at"])

    def close(self) -> None:
        self._map.close()
        os.close(self.fd)


def on_arena(fd: int, places: list[dict[str, Any] | None], inputs: list[Any]) -> list[Any]:
    """The worker's side: `inputs` with each placed tensor built on its mapping of the arena
    (the rest as sent)."""
    placed = [p for p in places if p is not None]
    if not placed:
        return inputs
    end = max(p["at"] + p["nbytes"] for p in placed)
    mapping = mmap.mmap(fd, -(-end // mmap.PAGESIZE) * mmap.PAGESIZE)
    placed_tensors = _tensors_at(places, lambda place: torch.frombuffer(
        mapping, dtype=torch.uint8, count=place["nbytes"], offset=place["at"]).untyped_storage())
    return [x if t is None else t for x, t in zip(inputs, placed_tensors)]


def _tensors_at(places: list[dict[str, Any] | None],
                storage_of: Callable[[dict[str, Any]], torch.UntypedStorage]
                ) -> list[torch.Tensor | None]:
    """A tensor for each place (None where none), on `storage_of` it: one storage per place
    in the arena, shared by the tensors that share it there."""
    storages: dict[int, torch.UntypedStorage] = {}
    result: list[torch.Tensor | None] = []
    for place in places:
        if place is None:
            result.append(None)
            continue
        if place["at"] not in storages:
            storages[place["at"]] = storage_of(place)
        result.append(torch.empty(0, dtype=_dtype(place["dtype"])).set_(
            storages[place["at"]], place["offset"], place["shape"], place["stride"]))
    return result
