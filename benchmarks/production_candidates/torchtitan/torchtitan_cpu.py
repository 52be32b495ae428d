"""pytorch/torchtitan's Triton kernels on a CPU torch, as files.

torchtitan/__init__.py and the packages above a kernel file import its training stack
(distributed, spmd_types, the config system); the packages are registered as bare
namespaces over the checkout's folders instead, so only the kernel file and what it imports
load. The kernels and launchers are torchtitan's own.
"""

import importlib
import os
import sys
import types

# a checkout of pytorch/torchtitan, the folder holding torchtitan/ (not kept here)
SRC = os.environ.get("TORCHTITAN_SRC", "/tmp/scratch-hunt10/pytorch+torchtitan")


def load(name: str) -> types.ModuleType:
    """torchtitan.<name>, loaded from the checkout's file."""
    parts = ("torchtitan", *name.split(".")[:-1])
    for depth in range(1, len(parts) + 1):
        package = ".".join(parts[:depth])
        if package not in sys.modules:
            module = types.ModuleType(package)
            module.__path__ = [os.path.join(SRC, *parts[:depth])]
            sys.modules[package] = module
    return importlib.import_module(f"torchtitan.{name}")
