"""facebookresearch/xformers' Triton ops (xformers/ops/_triton/) on a CPU torch, as files.

xformers/__init__.py and xformers/ops/__init__.py import the C++/CUDA extension and every
operator; the packages above the kernel files are registered as bare namespaces over the
checkout's folders instead, so only the kernel file and xformers.triton.importing (its
libdevice lookup) load. The kernels and launchers are xformers' own.
"""

import importlib
import os
import sys
import types

# a checkout of facebookresearch/xformers, the folder holding xformers/ (not kept here)
SRC = os.environ.get("XFORMERS_SRC", "/tmp/scratch-hunt6/xf")


def load(name: str) -> types.ModuleType:
    """xformers.ops._triton.<name>, loaded from the checkout's file."""
    root = os.path.join(SRC, "xformers")
    for package, folder in (
        ("xformers", root),
        ("xformers.triton", os.path.join(root, "triton")),
        ("xformers.ops", os.path.join(root, "ops")),
        ("xformers.ops._triton", os.path.join(root, "ops", "_triton")),
    ):
        if package not in sys.modules:
            module = types.ModuleType(package)
            module.__path__ = [folder]
            sys.modules[package] = module
    return importlib.import_module(f"xformers.ops._triton.{name}")
