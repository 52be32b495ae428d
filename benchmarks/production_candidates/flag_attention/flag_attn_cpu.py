"""FlagOpen/FlagAttention's Triton attention (src/flag_attn/) on a CPU torch, as files.

flag_attn/__init__.py imports every op and the testing package; the package is registered as a
bare namespace over the checkout's folder instead, so only the op's file and those it imports
(total.py, split_kv.py, dropout.py) load. The kernels, launchers and configurations are
FlagAttention's own.
"""

import importlib
import os
import sys
import types

# a checkout of FlagOpen/FlagAttention, the folder holding flag_attn/ (its src/; not kept here)
SRC = os.environ.get("FLAG_ATTN_SRC", "/tmp/scratch-hunt7/fattn/src")


def load(name: str) -> types.ModuleType:
    """flag_attn.<name>, loaded from the checkout's file."""
    if "flag_attn" not in sys.modules:
        package = types.ModuleType("flag_attn")
        package.__path__ = [os.path.join(SRC, "flag_attn")]
        sys.modules["flag_attn"] = package
    return importlib.import_module(f"flag_attn.{name}")
