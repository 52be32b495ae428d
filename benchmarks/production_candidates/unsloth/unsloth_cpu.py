"""unslothai/unsloth's Triton kernels (`unsloth/kernels/`) on a CPU torch, as files.

unsloth/__init__.py checks for a GPU and patches transformers; `unsloth` and `unsloth.kernels`
are registered as bare namespaces over the checkout's folders instead, so only the kernel's
module and `kernels/utils.py` (the launch settings, unsloth's own) load. The names they import
from `unsloth.device_type`, `unsloth.bnb_availability` and `unsloth_zoo` stand in as they answer
on one CUDA device (and transformers' Llama logger, where transformers is not installed); the
kernels and launchers are unsloth's own.
"""

import importlib
import logging
import os
import sys
import types

from packaging.version import Version

# a checkout of unslothai/unsloth, the folder holding unsloth/ (not kept here)
SRC = os.environ.get("UNSLOTH_SRC", "/tmp/scratch-hunt13")

DEVICE = {
    "is_hip": lambda: False,
    "get_device_type": lambda: "cuda",
    "DEVICE_TYPE": "cuda",
    "DEVICE_TYPE_TORCH": "cuda",
    "DEVICE_COUNT": 1,
    "ALLOW_PREQUANTIZED_MODELS": True,
}


def _stand_in(name: str, **names) -> None:
    if name not in sys.modules:
        module = types.ModuleType(name)
        module.__dict__.update(names)
        sys.modules[name] = module


def load(name: str) -> types.ModuleType:
    """unsloth.kernels.<name>, loaded from the checkout's file."""
    for package in ("unsloth", "unsloth.kernels"):
        if package not in sys.modules:
            module = types.ModuleType(package)
            module.__path__ = [os.path.join(SRC, *package.split("."))]
            sys.modules[package] = module
    _stand_in("unsloth.device_type", **DEVICE)
    _stand_in("unsloth.bnb_availability", native_kernels_ready=lambda: False)
    for package in ("unsloth_zoo", "unsloth_zoo.temporary_patches"):
        _stand_in(package)
    _stand_in("unsloth_zoo.utils", Version=Version)
    _stand_in("unsloth_zoo.log", logger=logging.getLogger("unsloth"))
    _stand_in("unsloth_zoo.temporary_patches.common", torch_compile=lambda f=None, **_: f)
    _stand_in("unsloth_zoo.loss_utils", patch_loss_functions=lambda *_, **__: None,
              post_patch_loss_function=lambda *_, **__: None)
    try:  # the cross entropy's logger
        importlib.import_module("transformers.models.llama.modeling_llama")
    except ImportError:
        for package in ("transformers", "transformers.models", "transformers.models.llama"):
            _stand_in(package)
        _stand_in("transformers.models.llama.modeling_llama", logger=logging.getLogger("llama"))
    return importlib.import_module(f"unsloth.kernels.{name}")
