"""ModelTC/lightllm's Triton kernels on a CPU torch (through Triton's interpreter), as files.

lightllm's package imports its serving stack (and asks the GPU) at import; its kernels under
lightllm/models/*/triton_kernel/ import only torch and triton, so each module is loaded from
its file. The one other import, `lightllm.utils.device_utils.is_tesla` (context attention
picks BLOCK_M 64 on a Tesla), is answered for an H100 (not a Tesla). The kernels, launchers,
block sizes and warps are lightllm's own.
"""

import importlib.util
import os
import sys
import types

# a checkout of ModelTC/lightllm (not kept here)
SRC = os.environ.get("LIGHTLLM_SRC", "/tmp/scratch-hunt3/lightllm")

if "lightllm.utils.device_utils" not in sys.modules:
    for name in ("lightllm", "lightllm.utils"):
        sys.modules.setdefault(name, types.ModuleType(name))
    sys.modules["lightllm.utils.device_utils"] = types.SimpleNamespace(is_tesla=lambda: False)


def load(path: str) -> types.ModuleType:
    """The module at `path` (relative to lightllm/models of the checkout), loaded once."""
    name = "lightllm_cpu." + path.removesuffix(".py").replace("/", ".")
    if name not in sys.modules:
        file = os.path.join(SRC, "lightllm", "models", path)
        spec = importlib.util.spec_from_file_location(name, file)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]
