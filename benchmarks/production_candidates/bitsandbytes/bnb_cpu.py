"""bitsandbytes' Triton backend (bitsandbytes/backends/triton/) on a CPU torch, as files.

bitsandbytes/__init__.py loads its native library and registers every backend; the packages
above the Triton backend are registered as bare namespaces over the checkout's folders
instead, so only the backend's files load. The kernels and their launchers (`ops.py`) are
bitsandbytes' own.
"""

import importlib
import os
import sys
import types

import torch

# a checkout of bitsandbytes-foundation/bitsandbytes, the folder holding bitsandbytes/
SRC = os.environ.get("BITSANDBYTES_SRC", "/tmp/scratch-hunt7/bnb")


def load(name: str) -> types.ModuleType:
    """bitsandbytes.backends.triton.<name>, loaded from the checkout's file."""
    root = os.path.join(SRC, "bitsandbytes")
    for package, folder in (
        ("bitsandbytes", root),
        ("bitsandbytes.backends", os.path.join(root, "backends")),
        ("bitsandbytes.backends.triton", os.path.join(root, "backends", "triton")),
    ):
        if package not in sys.modules:
            module = types.ModuleType(package)
            module.__path__ = [folder]
            sys.modules[package] = module
    return importlib.import_module(f"bitsandbytes.backends.triton.{name}")


def dynamic_map() -> torch.Tensor:
    """bitsandbytes' signed 8-bit dynamic code (`functional.create_dynamic_map()`): for each
    exponent 10^-6 .. 10^0, the midpoints of an even split of [0.1, 1] into 2^i parts, both
    signs; then 0 and 1, padded with zeros to 256 and sorted."""
    data = []
    for i in range(7):
        bounds = torch.linspace(0.1, 1, 2**i + 1, dtype=torch.float32)
        means = ((bounds[:-1] + bounds[1:]) / 2.0).tolist()
        data += [10 ** (i - 6) * m for m in means] + [-(10 ** (i - 6)) * m for m in means]
    data += [0, 1.0]
    data += [0] * (256 - len(data))
    return torch.tensor(sorted(data), dtype=torch.float32)
