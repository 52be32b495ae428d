"""pytorch-labs/applied-ai's Triton kernels (kernels/triton/) on a CPU torch, as files.

The repository is a collection of scripts, not a package: each kernel file is loaded under a
module name of its own from the checkout. The kernels and launchers are applied-ai's own.
"""

import importlib.util
import os
import sys
import types

# a checkout of pytorch-labs/applied-ai, the folder holding kernels/ (not kept here)
SRC = os.environ.get("APPLIED_AI_SRC", "/tmp/scratch-hunt7/aai")


def load(path: str) -> types.ModuleType:
    """The module of kernels/triton/<path>.py, loaded once from the checkout's file."""
    name = "applied_ai." + path.replace("/", ".")
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, os.path.join(SRC, "kernels", "triton", path + ".py")
        )
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]
