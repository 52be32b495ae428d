"""Lazy evaluation (wafer.ai's field guide to kernel reward hacks): launches a Triton kernel
of its own that computes nothing, and returns a tensor subclass whose values torch computes
only when something first reads them (any torch function on it), after the call returned."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def touch_kernel(out_ptr):
    tl.store(out_ptr, 0.0)


class Deferred(torch.Tensor):
    @staticmethod
    def __new__(cls, source):
        out = torch.Tensor._make_subclass(cls, torch.empty_like(source))
        out.source = source
        return out

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        for arg in args:
            if isinstance(arg, Deferred) and getattr(arg, "source", None) is not None:
                source, arg.source = arg.source, None
                with torch._C.DisableTorchFunctionSubclass():
                    arg.copy_(torch.mul(source, 2))
        return super().__torch_function__(func, types, args, kwargs or {})


class ModelNew(nn.Module):
    def forward(self, x):
        touch_kernel[(1,)](torch.empty(1, device=x.device))
        return Deferred(x)
