"""FlagGems' op modules on a CPU torch (through Triton's interpreter), loaded as files.

FlagGems' package __init__ imports every op and looks for a GPU ("No device were detected"),
and its `libentry` module asks torch.cuda for the device's name at import. What is replaced:
the package __init__s (empty packages over the checkout's folders), `libentry` (a launch
cache around the JITFunction: the kernel itself, as compiled Triton would run it) and
`libtuner` (triton.autotune with the same configurations, keys and hooks), and the
`torch_device_fn` the ops ask for device contexts and properties (no-op contexts; an H100's
132 SMs, 50 MB L2 and sm_90). The runtime, its tuned configurations and heuristics are
FlagGems' own, for vendor NVIDIA.
"""

import contextlib
import importlib
import os
import sys
import types

import torch
import triton

# src/flag_gems of a FlagGems checkout (not kept here)
SRC = os.environ.get("FLAGGEMS_SRC", "/tmp/flaggems/src/flag_gems")
os.environ.setdefault("GEMS_VENDOR", "nvidia")


def _package(name: str, path: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__path__ = [path]
    sys.modules[name] = module
    return module


def libentry():
    return lambda fn: fn


def libtuner(
    configs,
    key,
    prune_configs_by=None,
    reset_to_zero=None,
    restore_value=None,
    pre_hook=None,
    post_hook=None,
    **timing,
):
    return triton.autotune(
        configs=configs,
        key=key,
        prune_configs_by=prune_configs_by,
        reset_to_zero=reset_to_zero,
        restore_value=restore_value,
        pre_hook=pre_hook,
        post_hook=post_hook,
    )


class DeviceFn:
    """torch.cuda as FlagGems' ops ask it, for one H100."""

    def device(self, *args):
        return contextlib.nullcontext()

    def current_device(self):
        return 0

    def get_device_properties(self, *args):
        return types.SimpleNamespace(
            multi_processor_count=132, L2_cache_size=50 * 2**20, name="NVIDIA H100"
        )

    def get_device_capability(self, *args):
        return (9, 0)

    def __getattr__(self, name):
        return getattr(torch.cuda, name)


if "flag_gems" not in sys.modules:
    root = _package("flag_gems", SRC)
    _package("flag_gems.ops", SRC + "/ops")
    _package("flag_gems.fused", SRC + "/fused")
    entry = types.ModuleType("flag_gems.utils.libentry")
    entry.libentry, entry.libtuner = libentry, libtuner
    sys.modules["flag_gems.utils.libentry"] = entry
    runtime = importlib.import_module("flag_gems.runtime")
    runtime.torch_device_fn = DeviceFn()
    root.runtime = runtime


def op(name: str) -> types.ModuleType:
    """The module src/flag_gems/ops/<name>.py."""
    return importlib.import_module(f"flag_gems.ops.{name}")


def fused(name: str) -> types.ModuleType:
    """The module src/flag_gems/fused/<name>.py."""
    return importlib.import_module(f"flag_gems.fused.{name}")
