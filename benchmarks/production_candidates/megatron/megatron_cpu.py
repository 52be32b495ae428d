"""NVIDIA/Megatron-LM's Triton fused ops on a CPU torch, as files.

megatron/core/__init__.py imports the training stack (parallel state, distributed
checkpointing); the packages above each op's module are registered as bare namespaces over the
checkout's folders instead. Two of its modules stand in: `megatron.core.utils` for the one name
the op modules take from it (`null_decorator`, used only where Triton is missing), and
`megatron.core.jit`, whose `jit_fuser` is the plain function, as Megatron's own
`disable_jit_fuser()` sets it (torch.compile around a launcher that transposes, converts and
launches: the kernel is the same). The kernels and launchers are Megatron's own.
"""

import importlib
import os
import sys
import types

# a checkout of NVIDIA/Megatron-LM (the folder holding megatron/)
SRC = os.environ.get("MEGATRON_SRC", "/tmp/scratch-hunt15/meg")


def _null_decorator(*args, **kwargs):
    if len(args) == 1 and not kwargs and callable(args[0]):
        return args[0]
    return lambda function: function


def load(name: str) -> types.ModuleType:
    """megatron.core.<name> (`fusions.fused_pad_routing_map`), loaded from the checkout's
    file."""
    parts = f"megatron.core.{name}".split(".")
    for depth in range(1, len(parts)):
        package = ".".join(parts[:depth])
        if package not in sys.modules:
            module = types.ModuleType(package)
            module.__path__ = [os.path.join(SRC, *parts[:depth])]
            sys.modules[package] = module
    if "megatron.core.utils" not in sys.modules:
        utils = types.ModuleType("megatron.core.utils")
        utils.null_decorator = _null_decorator
        sys.modules["megatron.core.utils"] = utils
    if "megatron.core.jit" not in sys.modules:
        jit = types.ModuleType("megatron.core.jit")
        jit.jit_fuser = lambda function: function
        sys.modules["megatron.core.jit"] = jit
    return importlib.import_module(f"megatron.core.{name}")
