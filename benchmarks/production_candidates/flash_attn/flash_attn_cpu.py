"""Dao-AILab/flash-attention's Triton ops (flash_attn/ops/triton/) on a CPU torch, as files.

flash_attn/__init__.py imports the CUDA extension flash_attn_2_cuda; the packages above the
Triton files are registered as bare namespaces over the checkout's folders instead, so only the
Triton files and the two utils modules they import (flash_attn.utils.torch, .library) load. The
kernels, launchers, block sizes and autotune configurations are flash-attention's own.
"""

import importlib
import os
import sys
import types

# a checkout of Dao-AILab/flash-attention, the folder holding flash_attn/ (not kept here)
SRC = os.environ.get("FLASH_ATTN_SRC", "/tmp/scratch-hunt6/fa")


def load(name: str) -> types.ModuleType:
    """flash_attn.ops.triton.<name>, loaded from the checkout's file."""
    root = os.path.join(SRC, "flash_attn")
    for package, folder in (
        ("flash_attn", root),
        ("flash_attn.ops", os.path.join(root, "ops")),
        ("flash_attn.ops.triton", os.path.join(root, "ops", "triton")),
        ("flash_attn.utils", os.path.join(root, "utils")),
    ):
        if package not in sys.modules:
            module = types.ModuleType(package)
            module.__path__ = [folder]
            sys.modules[package] = module
    return importlib.import_module(f"flash_attn.ops.triton.{name}")
