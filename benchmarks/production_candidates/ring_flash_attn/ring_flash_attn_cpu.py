"""zhuzilin/ring-flash-attention's Triton helpers on a CPU torch, as a file.

ring_flash_attn/__init__.py imports flash-attn's CUDA extension; the package is registered as
a bare namespace over the checkout's folder instead, so only `triton_utils.py` (torch and
triton) loads. The kernels and launchers are ring-flash-attention's own.
"""

import importlib
import os
import sys
import types

# a checkout of zhuzilin/ring-flash-attention, the folder holding ring_flash_attn/ (not kept here)
SRC = os.environ.get("RING_FLASH_ATTN_SRC", "/tmp/scratch-hunt14/zhuzilin+ring-flash-attention")


def triton_utils() -> types.ModuleType:
    """ring_flash_attn.triton_utils, loaded from the checkout's file."""
    if "ring_flash_attn" not in sys.modules:
        package = types.ModuleType("ring_flash_attn")
        package.__path__ = [os.path.join(SRC, "ring_flash_attn")]
        sys.modules["ring_flash_attn"] = package
    return importlib.import_module("ring_flash_attn.triton_utils")
