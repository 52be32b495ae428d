"""kvcache-ai/ktransformers' Triton attention on a CPU torch, as a file.

ktransformers/__init__.py loads its C++ extensions; the packages above
`operators/triton_attention.py` are registered as bare namespaces over the checkout's folders
instead. The file imports `ktransformers.util.vendors` for the GPU's vendor alone (it detects
the device and moves an example tensor to it at import): a stand-in answers NVIDIA, as on an
H100 or H200, and names its two device helpers, which the file imports and never calls. The kernels and launchers are ktransformers' own.
"""

import enum
import importlib
import os
import sys
import types

# a checkout of kvcache-ai/ktransformers, the folder holding ktransformers/ (its archive/)
SRC = os.environ.get("KTRANSFORMERS_SRC", "/tmp/scratch-hunt14/kt/archive")


def _not_loaded(*args, **kwargs):
    raise NotImplementedError("ktransformers' device helpers are not loaded on the CPU")


def load(name: str) -> types.ModuleType:
    """ktransformers.operators.<name>, loaded from the checkout's file."""
    for package in ("ktransformers", "ktransformers.operators", "ktransformers.util"):
        if package not in sys.modules:
            module = types.ModuleType(package)
            module.__path__ = [os.path.join(SRC, *package.split("."))]
            sys.modules[package] = module
    if "ktransformers.util.vendors" not in sys.modules:
        vendors = types.ModuleType("ktransformers.util.vendors")
        vendors.GPUVendor = enum.IntEnum("GPUVendor", "NVIDIA AMD MooreThreads MetaX MUSA Unknown")
        vendors.device_manager = types.SimpleNamespace(gpu_vendor=vendors.GPUVendor.NVIDIA)
        vendors.get_device = vendors.to_device = _not_loaded  # imported, never called
        sys.modules["ktransformers.util.vendors"] = vendors
    return importlib.import_module(f"ktransformers.operators.{name}")
