"""state-spaces/mamba's Mamba-2 Triton ops (mamba_ssm/ops/triton/) on a CPU torch, as files.

mamba_ssm/__init__.py imports the whole package (selective_scan_cuda and causal_conv1d, CUDA
extensions built at install); the packages above the Triton files are registered as bare
namespaces over the checkout's folders instead, so only the Triton files and the two small
utils modules they import (determinism, torch) load. The kernels, launchers, block sizes and
autotune configurations are mamba_ssm's own. einops must be installed (the launchers call
rearrange).
"""

import importlib
import os
import sys
import types

# a checkout of state-spaces/mamba, the folder holding mamba_ssm/ (not kept here)
SRC = os.environ.get("MAMBA_SSM_SRC", "/tmp/scratch-hunt5/mamba")


def load(name: str) -> types.ModuleType:
    """mamba_ssm.ops.triton.<name>, loaded from the checkout's file."""
    root = os.path.join(SRC, "mamba_ssm")
    for package, folder in (
        ("mamba_ssm", root),
        ("mamba_ssm.ops", os.path.join(root, "ops")),
        ("mamba_ssm.ops.triton", os.path.join(root, "ops", "triton")),
        ("mamba_ssm.utils", os.path.join(root, "utils")),
    ):
        if package not in sys.modules:
            module = types.ModuleType(package)
            module.__path__ = [folder]
            sys.modules[package] = module
    return importlib.import_module(f"mamba_ssm.ops.triton.{name}")
