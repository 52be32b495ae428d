"""bitsandbytes' Triton backend (bitsandbytes/backends/triton/) on a CPU torch, as files.

bitsandbytes/__init__.py loads its native library and registers every backend; the packages
above the Triton backend are registered as bare namespaces over the checkout's folders
instead, so only the backend's kernel files load. The kernels and their launchers
(`quantize_blockwise_triton`, `dequant_8bit_blockwise`, `quantize_4bit_blockwise_triton`,
`dequantize_4bit_impl`) are bitsandbytes' own; `ops.py`'s few lines around them (a flat copy,
the padding to a whole block, the output buffers) are repeated in `quantize_4bit` below.
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


def quantize_4bit(A: torch.Tensor, blocksize: int, quant_type: str):
    """ops.quantize_4bit's launch (uint8 storage): packed codes (n / 2, 1) and absmax."""
    n = A.numel()
    if n % blocksize:
        A = torch.nn.functional.pad(A.view(-1), (0, blocksize - n % blocksize), value=0.0)
        n = A.numel()
    blocks = -(n // -(blocksize * 2))
    absmax = torch.empty((blocks * 2,), dtype=A.dtype)
    out = torch.empty((n - n // 2, 1), dtype=torch.uint8)
    load("kernels_4bit").quantize_4bit_blockwise_triton(
        A, blocksize, quant_type, blocks, absmax, num_elements=n, quantized_out=out
    )
    return out, absmax.float()


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
