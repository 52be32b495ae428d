"""pytorch/FBGEMM's Triton ops on a CPU torch, as files.

fbgemm_gpu/__init__.py loads the package's compiled operator libraries; the packages above
each Triton module (`fbgemm_gpu`, `fbgemm_gpu.sll`, `fbgemm_gpu.sll.triton`,
`fbgemm_gpu.triton`) are registered as bare namespaces over the checkout's folders instead.
The Triton modules import only torch, triton and their siblings: the kernels and launchers are
FBGEMM's own.
"""

import importlib
import os
import sys
import types

# the folder holding fbgemm_gpu/ (fbgemm_gpu/fbgemm_gpu of a checkout of pytorch/FBGEMM)
SRC = os.environ.get("FBGEMM_SRC", "/tmp/scratch-hunt16/fbgemm/fbgemm_gpu")


def load(name: str) -> types.ModuleType:
    """fbgemm_gpu.<name> (`sll.triton.triton_jagged_softmax`), loaded from the checkout's file."""
    parts = f"fbgemm_gpu.{name}".split(".")
    for depth in range(1, len(parts)):
        package = ".".join(parts[:depth])
        if package not in sys.modules:
            module = types.ModuleType(package)
            module.__path__ = [os.path.join(SRC, *parts[:depth])]
            sys.modules[package] = module
    return importlib.import_module(f"fbgemm_gpu.{name}")
