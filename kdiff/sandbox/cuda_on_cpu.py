"""Code written for a CUDA device, run on the CPU device.

Kernels judged on the CPU stand for an sm_90 GPU's (kdiff.sandbox.interpreter_device), and
code written for one names its device: tensors made on or moved to `device='cuda'` (by
keyword, `.cuda()`, `.to('cuda')`), `x.is_cuda` asserted, `torch.cuda.synchronize()` after a
launch. A CPU-only torch refuses each ("Torch not compiled with CUDA enabled"), so such an
honest kernel failed the native check and every gate on the CPU alone. Under `CudaOnCpu`
every torch call that names a CUDA device gets the CPU, the device standing in for it;
`is_cuda` answers True to the code written for the GPU, while torch's and kdiff's own readers
keep the answer for the device this process has (torch chooses its CUDA paths by it); and the
`torch.cuda` helpers that only manage device state do nothing. Autocast for the GPU is
autocast on the CPU standing in for it. Anything else that needs a real device (streams,
events, generators) still raises. With CUDA present none of this applies.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

import torch
from torch.overrides import TorchFunctionMode

_IS_CUDA = torch._C.TensorBase.is_cuda

# torch.cuda helpers that only manage device state: nothing to do on the CPU.
DEVICE_STATE_HELPERS: dict[str, Callable[..., None]] = {
    "synchronize": lambda *args, **kwargs: None,
    "empty_cache": lambda *args, **kwargs: None,
    "set_device": lambda *args, **kwargs: None,
}


def is_cuda_device(value: Any) -> bool:
    """Whether `value` names a CUDA device as torch reads a `device` argument: a device, a
    string ('cuda', 'cuda:1') or an index (a GPU's)."""
    if isinstance(value, torch.device):
        return value.type == "cuda"
    if isinstance(value, str):
        return value.split(":")[0] == "cuda"
    return isinstance(value, int) and not isinstance(value, bool)


def _read_by_torch_or_kdiff() -> bool:
    """Whether the reader of `is_cuda` (the caller of `__torch_function__`) is torch's or
    kdiff's own code."""
    reader = sys._getframe(2).f_globals.get("__name__", "")
    return reader.split(".")[0] in ("torch", "kdiff")


class CudaOnCpu(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if getattr(func, "__self__", None) is _IS_CUDA:  # the getter
            return func(*args, **kwargs) if _read_by_torch_or_kdiff() else True
        if func is torch.Tensor.cuda or func is torch.Tensor.pin_memory:
            return args[0]  # already on the device standing in for the GPU
        if "device" in kwargs and is_cuda_device(kwargs["device"]):
            kwargs = {**kwargs, "device": "cpu"}
        if func is torch.Tensor.to:  # x.to('cuda'), x.to(torch.device('cuda'), dtype)
            args = tuple("cpu" if is_cuda_device(a) else a for a in args)
        return func(*args, **kwargs)


def install() -> None:
    """For the rest of this process, where torch has no CUDA: CUDA-device code runs on the CPU
    (the worker of a candidate judged on the CPU device)."""
    if torch.cuda.is_available() or getattr(torch.cuda.synchronize, "of_the_cpu", False):
        return
    for name, helper in DEVICE_STATE_HELPERS.items():
        helper.of_the_cpu = True
        setattr(torch.cuda, name, helper)
    _autocast_on_the_stand_in()
    CudaOnCpu().__enter__()


def _autocast_on_the_stand_in() -> None:
    """A CPU-only torch disables `torch.autocast('cuda', ...)` (and `torch.cuda.amp.autocast`)
    with a warning, so a kernel computing its products in fp16 under it computed them in fp32
    on the CPU, and passed the precision gates that its run on a GPU fails. Here it is
    autocast on the CPU, at the GPU's dtype (fp16 unless given): the CPU's lists of operators
    are close to CUDA's (matrix products and convolutions lowered; softmax, norms, exp and log
    kept in fp32)."""
    autocast = torch.amp.autocast_mode.autocast
    init = autocast.__init__

    def init_on_the_cpu(self, device_type: str, dtype=None, enabled: bool = True,
                        cache_enabled=None) -> None:
        if device_type == "cuda":
            device_type, dtype = "cpu", dtype or torch.get_autocast_dtype("cuda")
        init(self, device_type, dtype, enabled, cache_enabled)

    autocast.__init__ = init_on_the_cpu
