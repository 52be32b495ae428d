"""triton-lang/triton's `triton_kernels` package (python/triton_kernels/) on a CPU torch, one
kernel file at a time.

The repository is over the fetch tool's size limit; the kernel file
`triton_kernels/topk_details/_topk_forward.py` (at 08503c47e2d0, read from the code index) is
kept in a scratch folder, and the launch below is written from its launcher's facts (its
`topk_forward`: int16 indices, a transposed uint32 bitmatrix of the chosen experts, 32 x 32
blocks, a scratchpad zeroed by the first programs), since the launcher's module imports the
package's tensor and bitmatrix classes. The kernel is the package's own.
"""

import importlib.util
import os
import sys
import types

import torch
import triton

# the folder holding triton_kernels/ (not kept here)
SRC = os.environ.get("TRITON_KERNELS_SRC", "/tmp/scratch-hunt6/tkern")
BLOCK_M, BLOCK_N, BLOCK_S = 32, 32, 128


def load(path: str) -> types.ModuleType:
    """The module at `path` (relative to triton_kernels/), loaded once from its file."""
    name = "triton_kernels_cpu." + path.removesuffix(".py").replace("/", ".")
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, os.path.join(SRC, "triton_kernels", path)
        )
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def topk(x: torch.Tensor, k: int, apply_softmax: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The k largest of each row of x, in ascending order of their column, their values
    softmaxed when asked, and the columns (int16, as the package returns them)."""
    n_rows, n_cols = x.shape
    n_cols_pad = triton.cdiv(n_cols, BLOCK_N) * BLOCK_N
    y_vals = torch.empty((n_rows, k), dtype=x.dtype, device=x.device)
    y_indx = torch.empty((n_rows, k), dtype=torch.int16, device=x.device)
    words = n_cols_pad // 32
    bitmatrix = torch.empty(
        (words, triton.cdiv(n_rows, 32) * 32), dtype=torch.uint32, device=x.device
    )
    bitmatrix = bitmatrix.transpose(0, 1)[:n_rows]
    s_blocks = triton.cdiv(n_cols, BLOCK_S)
    scratchpad = torch.empty((s_blocks * BLOCK_S,), dtype=torch.int32, device=x.device)
    pids = max(triton.cdiv(n_rows, BLOCK_M), s_blocks)
    load("topk_details/_topk_forward.py")._topk_forward[(pids,)](
        x,
        x.stride(0),
        y_vals,
        y_indx,
        y_vals.stride(0),
        False,
        bitmatrix,
        bitmatrix.stride(0),
        bitmatrix.stride(1),
        n_rows,
        None,
        n_cols,
        scratchpad,
        BLOCK_S,
        s_blocks,
        APPLY_SOFTMAX=apply_softmax,
        BLOCK_M=BLOCK_M,
        N_EXPTS_PAD=n_cols_pad,
        N_EXPTS_ACT=k,
        BLOCK_N=BLOCK_N,
    )
    return y_vals, y_indx
