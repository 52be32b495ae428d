"""thu-ml/SageAttention's Triton kernels on a CPU torch, as files.

sageattention/__init__.py imports its CUDA extensions (the qattn kernels); the packages above
sageattention/triton/ are registered as bare namespaces over the checkout's folders instead,
so only the Triton file loads. The kernels and launchers are SageAttention's own.
"""

import importlib
import os
import sys
import types

# a checkout of thu-ml/SageAttention, the folder holding sageattention/ (not kept here)
SRC = os.environ.get("SAGEATTENTION_SRC", "/tmp/scratch-hunt8/sage")


def load(name: str) -> types.ModuleType:
    """sageattention.triton.<name>, loaded from the checkout's file."""
    for package in ("sageattention", "sageattention.triton"):
        if package not in sys.modules:
            module = types.ModuleType(package)
            module.__path__ = [os.path.join(SRC, *package.split("."))]
            sys.modules[package] = module
    return importlib.import_module(f"sageattention.triton.{name}")
