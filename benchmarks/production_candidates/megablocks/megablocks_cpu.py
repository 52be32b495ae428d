"""databricks/megablocks' Triton kernels on a CPU torch, as a file, and its routing in torch.

megablocks/__init__.py imports its layers (and through them its CUDA extension); the kernel
file imports only torch and triton, so it is loaded alone. Its sort, histogram and cumsum
are CUDA extension ops (`megablocks_ops`), not Triton: `route` computes the same index
tensors in torch (a stable sort of the flattened expert ids, the inclusive cumsum of their
histogram), as megablocks' `topology` and `indices_and_bins` build them.
"""

import importlib.util
import os
import sys
import types

import torch

# a checkout of databricks/megablocks (not kept here)
SRC = os.environ.get("MEGABLOCKS_SRC", "/tmp/scratch-hunt10/databricks+megablocks")


def kernels() -> types.ModuleType:
    """megablocks/backend/kernels.py, loaded from the checkout's file."""
    name = "megablocks_backend_kernels"
    if name not in sys.modules:
        path = os.path.join(SRC, "megablocks", "backend", "kernels.py")
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def route(expert_ids: torch.Tensor, num_experts: int):
    """(indices, bin_ids, bins) of megablocks' `indices_and_bins` for top-k expert ids."""
    bin_ids, indices = torch.sort(expert_ids.flatten().int(), stable=True)
    counts = torch.bincount(expert_ids.flatten(), minlength=num_experts)
    return indices.int(), bin_ids, counts.cumsum(0).int()
