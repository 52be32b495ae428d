"""kakaobrain/trident on a CPU torch (through Triton's interpreter), imported from a checkout.

Trident imports `nvtx` (NVIDIA's profiling ranges) at import and calls it only when its
`config.use_trace` is set (off by default); where the package is absent a module whose ranges
do nothing stands in. Trident was written for Triton 2.1, whose `triton.autotune` took
(configs, key, prune_configs_by, reset_to_zero, warmup, rep) by position; Triton 3 put
restore_value and pre_hook in the fifth and sixth places, so while Trident's kernels are
defined its positional call is passed on by keyword (warmup and rep time configurations,
which interpreted runs do not). Everything else, its autotuned configurations and heuristics
included, is Trident's own.
"""

import os
import sys
import types

# a checkout of kakaobrain/trident (not kept here)
SRC = os.environ.get("TRIDENT_SRC", "/tmp/scratch-hunt3/trident")

try:
    import nvtx  # noqa: F401
except ImportError:
    sys.modules["nvtx"] = types.SimpleNamespace(
        push_range=lambda *args, **kwargs: None, pop_range=lambda *args, **kwargs: None
    )

if SRC not in sys.path:
    sys.path.insert(0, SRC)

import triton  # noqa: E402

_triton_autotune = triton.autotune


def _autotune_of_triton_2_1(
    configs, key, prune_configs_by=None, reset_to_zero=None, warmup=25, rep=100
):
    return _triton_autotune(
        configs, key, prune_configs_by=prune_configs_by, reset_to_zero=reset_to_zero
    )


triton.autotune = _autotune_of_triton_2_1
try:
    import trident
finally:
    triton.autotune = _triton_autotune

function = trident.function
