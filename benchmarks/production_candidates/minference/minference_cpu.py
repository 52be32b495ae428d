"""microsoft/MInference's Triton ops on a CPU torch, as files.

minference/__init__.py imports its model patches (transformers, vLLM) and ops/ files import
its CUDA extension (`minference.cuda`); the packages above a kernel file are registered as
bare namespaces over the checkout's folders instead, so only the kernel file and the modules
it imports load. Stand-ins for the names the files import and the judged ops never call:
`minference.cuda.convert_vertical_slash_indexes` (the vertical-slash wrapper's index
builder; the candidates pass the built indexes), and for kivi.py transformers' `Cache`,
`repeat_kv` and `_is_package_available` (no `kivi_gemv`). The kernels and launchers are
MInference's own.
"""

import importlib
import os
import sys
import types

# a checkout of microsoft/MInference, the folder holding minference/ (not kept here)
SRC = os.environ.get("MINFERENCE_SRC", "/tmp/scratch-hunt14/microsoft+MInference")


def _not_judged(*args, **kwargs):
    raise NotImplementedError("MInference's CUDA extension is not loaded on the CPU")


def _stand_in(name: str, **names) -> None:
    if name not in sys.modules:
        module = types.ModuleType(name)
        module.__dict__.update(names)
        sys.modules[name] = module


def load(name: str) -> types.ModuleType:
    """minference.<name> (`ops.xattention_fa`, `modules.kivi`), loaded from the checkout's file."""
    for package in ("minference", "minference.ops", "minference.modules"):
        if package not in sys.modules:
            module = types.ModuleType(package)
            module.__path__ = [os.path.join(SRC, *package.split("."))]
            sys.modules[package] = module
    _stand_in("minference.cuda", convert_vertical_slash_indexes=_not_judged)
    _stand_in("transformers")
    _stand_in("transformers.models")
    _stand_in("transformers.models.llama")
    _stand_in("transformers.models.llama.modeling_llama", Cache=object, repeat_kv=_not_judged)
    _stand_in("transformers.utils")
    _stand_in("transformers.utils.import_utils", _is_package_available=lambda name: False)
    return importlib.import_module(f"minference.{name}")
