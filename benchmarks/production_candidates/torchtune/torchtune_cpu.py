"""pytorch/torchtune's Triton MoE index kernel on a CPU torch, as a file.

torchtune/__init__.py imports its recipes' stack (torchao, torchdata, the model builders);
`torchtune/modules/moe/indices.py` imports only torch and triton, so it is loaded from the
checkout's file under its own name instead. The kernel and its launcher are torchtune's own.
"""

import importlib.util
import os
import sys
import types

# a checkout of pytorch/torchtune, the folder holding torchtune/ (not kept here)
SRC = os.environ.get("TORCHTUNE_SRC", "/tmp/scratch-hunt17/tt")


def load(name: str) -> types.ModuleType:
    """torchtune.<name> (`modules.moe.indices`), loaded from the checkout's file alone."""
    qualified = f"torchtune.{name}"
    if qualified not in sys.modules:
        path = os.path.join(SRC, "torchtune", *name.split(".")) + ".py"
        spec = importlib.util.spec_from_file_location(qualified, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[qualified] = module
        spec.loader.exec_module(module)
    return sys.modules[qualified]
