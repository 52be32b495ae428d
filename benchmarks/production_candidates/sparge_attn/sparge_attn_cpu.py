"""thu-ml/SpargeAttn's Triton ops on a CPU torch, as files.

spas_sage_attn/__init__.py imports its compiled CUDA attention (`core`); the package is
registered as a bare namespace over the checkout's folder instead, and its Triton modules
(`utils`: block pooling and similarity, block maps to look-up tables; `quant_per_block`: int8
quantization by blocks) load as they are. `utils` imports einops (`pip install einops`). The
kernels and launchers are SpargeAttn's own.
"""

import importlib
import os
import sys
import types

# a checkout of thu-ml/SpargeAttn (the folder holding spas_sage_attn/)
SRC = os.environ.get("SPARGE_ATTN_SRC", "/tmp/scratch-hunt15/sparge")


def load(name: str) -> types.ModuleType:
    """spas_sage_attn.<name>, loaded from the checkout's file."""
    if "spas_sage_attn" not in sys.modules:
        package = types.ModuleType("spas_sage_attn")
        package.__path__ = [os.path.join(SRC, "spas_sage_attn")]
        sys.modules["spas_sage_attn"] = package
    return importlib.import_module(f"spas_sage_attn.{name}")
