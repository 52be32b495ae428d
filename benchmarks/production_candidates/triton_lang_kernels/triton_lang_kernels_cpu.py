"""triton-lang/kernels' Triton ops (kernels/*.py) on a CPU torch, as files.

kernels/__init__.py imports every op (block-sparse included); the package is registered as a
bare namespace over the checkout's folder instead, so only the op's file and what it imports
load. The kernels, launchers, heuristics and autotune configurations are the repository's own.
"""

import importlib
import os
import sys
import types

# a checkout of triton-lang/kernels, the folder holding kernels/ (not kept here)
SRC = os.environ.get("TRITON_LANG_KERNELS_SRC", "/tmp/scratch-hunt6/tk")


def load(name: str) -> types.ModuleType:
    """kernels.<name>, loaded from the checkout's file."""
    if "kernels" not in sys.modules:
        module = types.ModuleType("kernels")
        module.__path__ = [os.path.join(SRC, "kernels")]
        sys.modules["kernels"] = module
    return importlib.import_module(f"kernels.{name}")
