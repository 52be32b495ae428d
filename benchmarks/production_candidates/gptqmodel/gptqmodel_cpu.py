"""ModelCloud/GPTQModel's Triton dequantization on a CPU torch, as a file.

gptqmodel/__init__.py imports the whole quantization stack (transformers, its model
definitions, device probes); the packages above `nn_modules/triton_utils/dequant.py` are
registered as bare namespaces over the checkout's folders instead, and `gptqmodel.utils.torch`
stands in for the one name the module takes from it (`HAS_XPU`: False, no Intel GPU). The
kernel and its launcher are GPTQModel's own.
"""

import importlib
import os
import sys
import types

# a checkout of ModelCloud/GPTQModel (the folder holding gptqmodel/)
SRC = os.environ.get("GPTQMODEL_SRC", "/tmp/scratch-hunt16/gptqmodel")


def load(name: str) -> types.ModuleType:
    """gptqmodel.<name> (`nn_modules.triton_utils.dequant`), loaded from the checkout's file."""
    parts = f"gptqmodel.{name}".split(".")
    for depth in range(1, len(parts)):
        package = ".".join(parts[:depth])
        if package not in sys.modules:
            module = types.ModuleType(package)
            module.__path__ = [os.path.join(SRC, *parts[:depth])]
            sys.modules[package] = module
    if "gptqmodel.utils.torch" not in sys.modules:
        utils = types.ModuleType("gptqmodel.utils")
        utils.__path__ = []
        sys.modules.setdefault("gptqmodel.utils", utils)
        torch_utils = types.ModuleType("gptqmodel.utils.torch")
        torch_utils.HAS_XPU = False
        sys.modules["gptqmodel.utils.torch"] = torch_utils
    return importlib.import_module(f"gptqmodel.{name}")
