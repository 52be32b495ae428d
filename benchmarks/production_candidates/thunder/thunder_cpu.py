"""Lightning-AI/lightning-thunder's Triton cross entropy on a CPU torch, as a file.

thunder/executors/triton_crossentropy_impl.py registers itself as one of thunder's executors
at import (`thunder.extend`, `thunder.torch`: thunder's tracing stack). The packages above it
are registered as bare namespaces over the checkout's folders, and the three modules it takes
names from stand in: `thunder.extend` (an executor whose registrations record nothing),
`thunder.executors.triton_utils` (Triton's version, read from triton) and `thunder.torch`
(the `cross_entropy` symbol the registration names). The kernels and the autograd function are
thunder's own.
"""

import importlib
import os
import sys
import types

import triton

# a checkout of Lightning-AI/lightning-thunder (the folder holding thunder/)
SRC = os.environ.get("THUNDER_SRC", "/tmp/scratch-hunt16/thunder")


class _Executor:
    def __init__(self, name, version=None):
        self.name, self.version = name, version

    def register_operator(self, name, like=None, fn=None):
        return fn

    def register_implementation(self, symbol, op, checker=None):
        pass


def _stand_in(name: str, **names) -> None:
    if name not in sys.modules:
        module = types.ModuleType(name)
        module.__dict__.update(names)
        sys.modules[name] = module


def load() -> types.ModuleType:
    """thunder.executors.triton_crossentropy_impl, loaded from the checkout's file."""
    for package in ("thunder", "thunder.executors"):
        if package not in sys.modules:
            module = types.ModuleType(package)
            module.__path__ = [os.path.join(SRC, *package.split("."))]
            sys.modules[package] = module
    _stand_in("thunder.extend", OperatorExecutor=_Executor, register_executor=lambda executor: None)
    _stand_in("thunder.executors.triton_utils", triton_version=lambda: triton.__version__,
              is_triton_version_at_least=lambda version: True)
    _stand_in("thunder.torch", cross_entropy=None, to_torch_dtype=lambda dtype: dtype)
    return importlib.import_module("thunder.executors.triton_crossentropy_impl")
