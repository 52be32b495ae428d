"""NVIDIA/TransformerEngine's PyTorch Triton kernels on a CPU torch, as files.

transformer_engine/__init__.py loads its C++ libraries, and transformer_engine.pytorch.triton's
__init__ imports its mHC kernels; the packages above the Triton files are registered as bare
namespaces over the checkout's folders instead, so only the wrapper file and the
common/triton kernel file it imports load. The kernels and launchers are TransformerEngine's own.
"""

import importlib
import os
import sys
import types

# a checkout of NVIDIA/TransformerEngine, the folder holding transformer_engine/ (not kept here)
SRC = os.environ.get("TRANSFORMER_ENGINE_SRC", "/tmp/scratch-hunt8/te")


def load(name: str) -> types.ModuleType:
    """transformer_engine.pytorch.triton.<name>, loaded from the checkout's file."""
    for package in (
        "transformer_engine",
        "transformer_engine.common",
        "transformer_engine.common.triton",
        "transformer_engine.pytorch",
        "transformer_engine.pytorch.triton",
    ):
        if package not in sys.modules:
            module = types.ModuleType(package)
            module.__path__ = [os.path.join(SRC, *package.split("."))]
            sys.modules[package] = module
    return importlib.import_module(f"transformer_engine.pytorch.triton.{name}")
