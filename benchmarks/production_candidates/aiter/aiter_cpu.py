"""ROCm/aiter's plain Triton ops (`aiter/ops/triton/`) on a CPU torch, as files.

aiter/__init__.py loads its compiled extensions and the ROCm stack; the packages above an
op's module are registered as bare namespaces over the checkout's folders instead, so only
the op's module, its kernels and the small utilities they import load. `aiter.dtypes`
(aiter/utility/dtypes.py, which asks the ROCm runtime for the GPU's architecture) stands in
for the one name the Triton ops read from it, `fp8`: E4M3 as aiter's table gives every
architecture but gfx942 (an sm_90 GPU's E4M3). The kernels, launchers and configurations are
aiter's own.
"""

import importlib
import os
import sys
import types

import torch

# a checkout of ROCm/aiter, the folder holding aiter/ (not kept here)
SRC = os.environ.get("AITER_SRC", "/tmp/scratch-hunt10/ROCm+aiter")


def load(name: str) -> types.ModuleType:
    """aiter.ops.triton.<name>, loaded from the checkout's file (the packages on the way
    bare too: `quant/__init__.py` imports the gluon kernels and aiter's ROCm utilities)."""
    parts = ("aiter", "ops", "triton", *name.split(".")[:-1])
    for depth in range(1, len(parts) + 1):
        package = ".".join(parts[:depth])
        if package not in sys.modules:
            module = types.ModuleType(package)
            module.__path__ = [os.path.join(SRC, *parts[:depth])]
            sys.modules[package] = module
    if "aiter.dtypes" not in sys.modules:
        dtypes = types.ModuleType("aiter.dtypes")
        dtypes.fp8 = torch.float8_e4m3fn
        sys.modules["aiter.dtypes"] = sys.modules["aiter"].dtypes = dtypes
    return importlib.import_module(f"aiter.ops.triton.{name}")
