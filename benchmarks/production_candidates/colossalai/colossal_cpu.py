"""hpcaitech/ColossalAI's inference Triton kernels (colossalai/kernel/triton/) on a CPU torch, as
files.

colossalai/__init__.py imports its distributed runtime and kernel/__init__ its extension
loaders; the packages above the Triton files are registered as bare namespaces over the
checkout's folders instead, so only the Triton file loads. The kernels and launchers are
ColossalAI's own.
"""

import importlib
import os
import sys
import types

# a checkout of hpcaitech/ColossalAI, the folder holding colossalai/ (not kept here)
SRC = os.environ.get("COLOSSALAI_SRC", "/tmp/scratch-hunt8/colossal")


def load(name: str) -> types.ModuleType:
    """colossalai.kernel.triton.<name>, loaded from the checkout's file."""
    for package in ("colossalai", "colossalai.kernel", "colossalai.kernel.triton"):
        if package not in sys.modules:
            module = types.ModuleType(package)
            module.__path__ = [os.path.join(SRC, *package.split("."))]
            sys.modules[package] = module
    return importlib.import_module(f"colossalai.kernel.triton.{name}")
