"""HazyResearch/based's Triton linear layers on a CPU torch, as files.

`based/ops/triton/linear.py` (flash-attention's former `ops/triton/linear.py`) imports
`triton.ops.matmul_perf_model`, which Triton 3 no longer ships: it is registered as
triton-lang/kernels' `matmul_perf_model.py` (the same module, moved there when Triton dropped
`triton.ops`). Its activations come from `flash_attn.ops.triton.k_activations`, an installed
flash-attention's (on `PYTHONPATH`: README). based/__init__.py imports its model stack; the
kernel file is loaded alone. The kernels, their autotune configurations and launchers are
based's own.
"""

import importlib.util
import os
import sys
import types

# a checkout of HazyResearch/based (the folder holding based/) and one of triton-lang/kernels
# (the folder holding kernels/); not kept here
SRC = os.environ.get("BASED_SRC", "/tmp/scratch-hunt17/based")
TRITON_KERNELS_SRC = os.environ.get("TRITON_LANG_KERNELS_SRC", "/tmp/scratch-hunt17/based")


def _load_file(qualified: str, path: str) -> types.ModuleType:
    if qualified not in sys.modules:
        spec = importlib.util.spec_from_file_location(qualified, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[qualified] = module
        spec.loader.exec_module(module)
    return sys.modules[qualified]


def linear() -> types.ModuleType:
    """based.ops.triton.linear, with `triton.ops.matmul_perf_model` registered first."""
    import triton

    if "triton.ops" not in sys.modules:
        ops = types.ModuleType("triton.ops")
        ops.__path__ = []
        sys.modules["triton.ops"] = triton.ops = ops
    _load_file("triton.ops.matmul_perf_model", os.path.join(TRITON_KERNELS_SRC, "kernels", "matmul_perf_model.py"))
    return _load_file("based.ops.triton.linear", os.path.join(SRC, "based", "ops", "triton", "linear.py"))
