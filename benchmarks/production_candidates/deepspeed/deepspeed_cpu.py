"""microsoft/DeepSpeed's inference Triton ops (deepspeed/ops/transformer/inference/triton/) on a
CPU torch (through Triton's interpreter), as files.

DeepSpeed's package builds or loads its C++/CUDA ops and asks for an accelerator at import; the
Triton op modules import only torch, triton and `deepspeed.accelerator.get_accelerator`, which
gelu and residual_add call once, to assert that their tensors are on the accelerator. That one
name is answered with an accelerator holding every tensor (the interpreter's CPU stands for the
GPU). The kernels, launchers and block sizes are DeepSpeed's own.
"""

import importlib.util
import os
import sys
import types

# a checkout of microsoft/DeepSpeed (not kept here)
SRC = os.environ.get("DEEPSPEED_SRC", "/tmp/scratch-hunt5/DeepSpeed")


class _Accelerator:
    def on_accelerator(self, tensor) -> bool:
        return True


if "deepspeed.accelerator" not in sys.modules:
    sys.modules.setdefault("deepspeed", types.ModuleType("deepspeed"))
    sys.modules["deepspeed.accelerator"] = types.SimpleNamespace(get_accelerator=_Accelerator)


def load(name: str) -> types.ModuleType:
    """deepspeed/ops/transformer/inference/triton/<name>.py of the checkout, loaded once."""
    module_name = "deepspeed_cpu." + name
    if module_name not in sys.modules:
        file = os.path.join(
            SRC, "deepspeed", "ops", "transformer", "inference", "triton", name + ".py"
        )
        spec = importlib.util.spec_from_file_location(module_name, file)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
    return sys.modules[module_name]
