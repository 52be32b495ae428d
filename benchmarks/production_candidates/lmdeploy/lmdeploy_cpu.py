"""InternLM/lmdeploy's pytorch-engine Triton kernels on a CPU torch, as files.

lmdeploy/__init__.py imports its serving stack, and kernels/cuda/__init__.py imports every
kernel module (some need tilelang and lmdeploy.messages); the packages above a kernel file
are registered as bare namespaces over the checkout's folders instead, so only the kernel
file and the modules it imports load. Two modules the kernel files import for one name each
stand in: `lmdeploy.utils` (it imports transformers) for `get_logger`, the standard library's
logger; `lmdeploy.messages` (the serving stack, pydantic) for `QuantPolicy`, the KV cache's
quantization constants as lmdeploy numbers them. The kernels, launchers and autotune
configurations are lmdeploy's own.
"""

import enum
import importlib
import logging
import os
import sys
import types

# a checkout of InternLM/lmdeploy, the folder holding lmdeploy/ (not kept here)
SRC = os.environ.get("LMDEPLOY_SRC", "/tmp/scratch-hunt8/lmdeploy")


def load(name: str) -> types.ModuleType:
    """lmdeploy.pytorch.kernels.cuda.<name>, loaded from the checkout's file."""
    parts = ("lmdeploy", "pytorch", "kernels", "cuda")
    for depth in range(1, len(parts) + 1):
        package = ".".join(parts[:depth])
        if package not in sys.modules:
            module = types.ModuleType(package)
            module.__path__ = [os.path.join(SRC, *parts[:depth])]
            sys.modules[package] = module
    if "lmdeploy.utils" not in sys.modules:
        utils = types.ModuleType("lmdeploy.utils")
        utils.get_logger = logging.getLogger
        sys.modules["lmdeploy.utils"] = utils
    if "lmdeploy.messages" not in sys.modules:
        messages = types.ModuleType("lmdeploy.messages")
        messages.QuantPolicy = enum.IntEnum(
            "QuantPolicy",
            {"NONE": 0, "INT4": 4, "INT8": 8, "FP8": 16, "FP8_E5M2": 17, "TURBO_QUANT": 42},
        )
        sys.modules["lmdeploy.messages"] = messages
    return importlib.import_module(f"lmdeploy.pytorch.kernels.cuda.{name}")
