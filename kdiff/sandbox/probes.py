"""Instruments used inside the worker: allocator poisoning and churn, live-memory accounting,
and whether its CUDA context still works. (The recorder of Triton launches lives in
kdiff.sandbox.launches.)"""
from __future__ import annotations

import gc
import random
from typing import Any, Callable

import torch

# Byte 0xFF repeated is a NaN in fp16, bf16, fp32 and fp64; -1 in every signed integer type.
POISON_BYTE = 0xFF
_EMPTY_FACTORIES = ("empty", "empty_like", "empty_strided")


class AllocationPoison:
    """Makes uninitialised memory visible: every `torch.empty*` result is filled with 0xFF
    bytes (NaN for floats) while armed. On CUDA the caching allocator is also pre-filled:
    large poisoned blocks are allocated and freed so that allocations made from C++ (a
    `load_inline` extension's `at::empty`) are carved from poisoned memory too."""

    def __init__(self, device: str) -> None:
        self.device = device
        self._saved: dict[str, Callable[..., Any]] = {}
        self._saved_new_empty: Callable[..., Any] | None = None

    def arm(self) -> None:
        if self.device == "cuda":
            _prefill_cuda_cache()
        for name in _EMPTY_FACTORIES:
            original = getattr(torch, name)
            self._saved[name] = original
            setattr(torch, name, _poisoning(original))
        self._saved_new_empty = torch.Tensor.new_empty
        torch.Tensor.new_empty = _poisoning(torch.Tensor.new_empty)

    def disarm(self) -> None:
        for name, original in self._saved.items():
            setattr(torch, name, original)
        if self._saved_new_empty is not None:
            torch.Tensor.new_empty = self._saved_new_empty


def _poisoning(factory: Callable[..., torch.Tensor]) -> Callable[..., torch.Tensor]:
    def poisoned(*args: Any, **kwargs: Any) -> torch.Tensor:
        t = factory(*args, **kwargs)
        if isinstance(t, torch.Tensor) and t.numel():
            t.untyped_storage().fill_(POISON_BYTE)
        return t
    poisoned.__wrapped__ = factory  # type: ignore[attr-defined]
    return poisoned


def _prefill_cuda_cache() -> None:
    # Sizes span the small (<1 MiB) and large pools of the caching allocator.
    blocks = [torch.empty(n, dtype=torch.uint8, device="cuda")
              for n in [512 << 10] * 8 + [4 << 20] * 8 + [64 << 20] * 2]
    for b in blocks:
        b.fill_(POISON_BYTE)
    torch.cuda.synchronize()
    del blocks  # freed into the cache, not to the driver


def churn_allocator(device: str, seed: int) -> None:
    """Allocate and free tensors of random sizes so that the next allocation lands elsewhere."""
    rng = random.Random(seed)
    keep = [torch.empty(rng.randint(1, 1 << 18), device=device) for _ in range(rng.randint(3, 9))]
    for t in keep[::2]:
        t.fill_(rng.random())
    del keep[rng.randrange(len(keep))]


def live_bytes() -> int:
    """Bytes of tensor storage reachable from Python (the CPU has no allocator counter that
    torch exposes). Objects in the collector's
    permanent generation (gc.freeze: what existed when the candidate had been imported) are
    not visited: a leak is growth from call to call, and every tensor a call keeps is new."""
    gc.collect()
    seen: set[int] = set()
    total = 0
    for obj in gc.get_objects():
        if isinstance(obj, torch.Tensor) and not obj.is_meta:
            try:
                st = obj.untyped_storage()
                ptr = st.data_ptr()  # FakeTensors torch.compile keeps have no data
            except (RuntimeError, NotImplementedError):
                continue
            if ptr in seen:
                continue
            seen.add(ptr)
            total += st.nbytes()
    return total


def context_broken(device: str) -> bool:
    """Whether this process's CUDA context no longer works, found by using it (a
    synchronisation and one small kernel); never on the CPU, which has none. After an illegal
    or misaligned access every later CUDA call of the process fails. An error's text tells
    nothing of it: a candidate raises "CUDA error: ..." as it likes, on the CPU too."""
    if not device.startswith("cuda"):
        return False
    try:
        torch.cuda.synchronize()
        torch.ones(1, device=device).add_(1).cpu()
    except Exception:  # noqa: BLE001 - any failure of the context's own use
        return True
    return False
