"""pytorch/ao's prototype Triton kernels on a CPU torch, as files.

torchao/__init__.py loads its C++ extensions and the quantization API; the packages above a
kernel file are registered as bare namespaces over the checkout's folders instead, so only the
kernel file loads. The kernels, launchers and autotune configurations are torchao's own.
"""

import importlib
import os
import sys
import types

# a checkout of pytorch/ao, the folder holding torchao/ (not kept here)
SRC = os.environ.get("TORCHAO_SRC", "/tmp/scratch-hunt7/ao")


def load(name: str) -> types.ModuleType:
    """torchao.<name> (dotted, under torchao/), loaded from the checkout's file."""
    parts = ["torchao", *name.split(".")[:-1]]
    for depth in range(1, len(parts) + 1):
        package = ".".join(parts[:depth])
        if package not in sys.modules:
            module = types.ModuleType(package)
            module.__path__ = [os.path.join(SRC, *parts[:depth])]
            sys.modules[package] = module
    return importlib.import_module(f"torchao.{name}")
