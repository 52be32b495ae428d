"""flashinfer-ai/flashinfer's Triton ops (`flashinfer/triton/`) on a CPU torch, as files.

flashinfer/__init__.py loads its JIT-compiled CUDA extensions; the packages above the Triton
ops are registered as bare namespaces over the checkout's folders instead, so only the op's
module and its kernels load. `flashinfer.utils` stands in for the two names the Triton ops
read from it, `get_compute_capability` (from torch's device properties, as flashinfer's own:
the worker answers an sm_90 GPU) and `GPUArchitectureError`. The kernels and launchers are
flashinfer's own.
"""

import importlib
import os
import sys
import types

import torch

# a checkout of flashinfer-ai/flashinfer, the folder holding flashinfer/ (not kept here)
SRC = os.environ.get("FLASHINFER_SRC", "/tmp/scratch-hunt12")


class GPUArchitectureError(Exception):
    pass


def _get_compute_capability(device: torch.device) -> tuple[int, int]:
    properties = torch.cuda.get_device_properties(device)
    return properties.major, properties.minor


def load(name: str) -> types.ModuleType:
    """flashinfer.triton.<name>, loaded from the checkout's file (its package's
    `__init__` imports the GEMMs, which look for ptxas)."""
    for package in ("flashinfer", "flashinfer.triton", "flashinfer.triton.kernels"):
        if package not in sys.modules:
            module = types.ModuleType(package)
            module.__path__ = [os.path.join(SRC, *package.split("."))]
            sys.modules[package] = module
    if "flashinfer.utils" not in sys.modules:
        utils = types.ModuleType("flashinfer.utils")
        utils.get_compute_capability = _get_compute_capability
        utils.GPUArchitectureError = GPUArchitectureError
        sys.modules["flashinfer.utils"] = utils
    return importlib.import_module(f"flashinfer.triton.{name}")
