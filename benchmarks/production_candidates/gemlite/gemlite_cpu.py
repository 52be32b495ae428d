"""mobiusml/gemlite's Triton kernels on a CPU torch, as files.

gemlite/__init__.py imports its helper module, which needs tqdm; the package is registered
as a bare namespace over the checkout's folder instead, so `gemlite.core` (the linear layer,
its packing and the Triton GEMM/GEMV kernels) and `gemlite.bitpack` load alone.

gemlite's autotuners prune their configs with generators (`kernel_config_pruner` yields),
and Triton 3.9's `Autotuner.run` takes the `len()` of the pruned configs: every autotuned
gemlite kernel raises under Triton 3.9, on a GPU as here. gemlite's own "default" setting
(`set_autotune(False)`: one config a kernel, nothing pruned) is set before its kernels are
used. Kernels, launchers and that configuration are gemlite's own.
"""

import importlib
import os
import sys
import types

# a checkout of mobiusml/gemlite, the folder holding gemlite/ (not kept here)
SRC = os.environ.get("GEMLITE_SRC", "/tmp/scratch-hunt10/mobiusml+gemlite")


def load(name: str) -> types.ModuleType:
    """gemlite.<name>, loaded from the checkout's file."""
    if "gemlite" not in sys.modules:
        package = types.ModuleType("gemlite")
        package.__path__ = [os.path.join(SRC, "gemlite")]
        sys.modules["gemlite"] = package
        # gemlite's own switch: its kernel modules reloaded under the setting, then the
        # package's names rebound to the reloaded kernels
        kernels = importlib.import_module("gemlite.triton_kernels")
        kernels.set_autotune(False)
        importlib.reload(kernels)
    return importlib.import_module(f"gemlite.{name}")
