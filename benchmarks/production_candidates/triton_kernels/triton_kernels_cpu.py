"""triton-lang/triton's `triton_kernels` package (python/triton_kernels/) on a CPU torch, one
kernel file at a time.

The repository is over the fetch tool's size limit; the kernel files are read from the code
index and kept in a scratch folder: `topk_details/_topk_forward.py` at 08503c47e2d0,
`swiglu_details/_swiglu.py` at 002402cf5a3e, `compaction_details/_masked_compaction.py` at
30d73568dd71 and `tensor_details/bitmatrix_details/sum_bitmatrix_rows.py` at 12d909bff965. Each launch below is written from its launcher's facts (`topk_forward`: int16
indices, a transposed uint32 bitmatrix of the chosen experts, 32 x 32 blocks, a scratchpad
zeroed by the first programs; `swiglu`: 32 bytes of rows by 128 columns, a semi-persistent
grid of at most 4 or 8 programs an SM, `maxnreg=64`; `compaction`: one program a row;
`sum_bitmatrix_rows`: its own launcher, given the bitmatrix's storage as the package's
`Bitmatrix` holds it), since
the launchers' modules import the package's tensor and bitmatrix classes. The kernels are
the package's own.
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


def swiglu(a: torch.Tensor, alpha: float, limit: float | None) -> torch.Tensor:
    """gpt-oss's SwiGLU of interleaved (gelu, linear) columns: g sigmoid(alpha g) (l + 1),
    g clipped above and l both ways at `limit`, as the package's `swiglu` launches it."""
    n = a.shape[-1]
    m = a.numel() // n
    assert a.stride()[-1] == 1 and n % 2 == 0
    out = torch.empty((m, n // 2), dtype=a.dtype, device=a.device)
    block_m, block_n = 32 // a.itemsize, 128
    n_blocks = triton.cdiv(n // 2, block_n)
    m_blocks = triton.cdiv(m, block_m)
    num_sms = torch.cuda.get_device_properties(0).multi_processor_count
    if m_blocks * n_blocks >= 8 * num_sms:
        grid = (8 * num_sms,)
    else:
        grid = (min(m_blocks * n_blocks, 4 * num_sms),)
    load("swiglu_details/_swiglu.py")._swiglu[grid](
        out,
        None,
        a,
        None,
        alpha,
        m,
        n // 2,
        a.shape[-1],
        1,
        out.shape[-1],
        1,
        limit,
        None,
        BLOCK_M=block_m,
        BLOCK_N=block_n,
        EVEN_N=(n // 2) % block_n == 0,
        M_BLOCKS=m_blocks,
        N_BLOCKS=n_blocks,
        num_warps=4,
        maxnreg=64,
    )
    return out.view(a.shape[:-1] + out.shape[-1:])


def compaction(yv: torch.Tensor, yi: torch.Tensor, bitmask: torch.Tensor, sentinel: int = -1):
    """Each row's (value, index) pairs whose index is set in the row's bitmask, first and in
    order, the others `sentinel`, as the package's `compaction` launches it."""
    ret_yv, ret_yi = torch.empty_like(yv), torch.empty_like(yi)
    load("compaction_details/_masked_compaction.py")._masked_compaction[(yi.shape[0],)](
        yv,
        yi,
        bitmask,
        bitmask.stride(0),
        bitmask.stride(1),
        ret_yv,
        ret_yi,
        sentinel,
        K=yi.shape[1],
    )
    return ret_yv, ret_yi


class _Bitmatrix:
    """What `sum_bitmatrix_rows` reads of the package's Bitmatrix: its storage, device,
    shape (in bits) and strides (in words), and the largest row count."""

    def __init__(self, words: torch.Tensor) -> None:
        self.storage = types.SimpleNamespace(data=words)
        self.device = words.device
        self.shape = (words.shape[0], words.shape[1] * 32)
        self.shape_max = self.shape
        self.stride = words.stride


def sum_bitmatrix_rows(words: torch.Tensor, partials_block_size: int):
    """Per column of a uint32 bitmatrix (32 columns a word), how many rows have the bit set,
    and the same per block of `partials_block_size` rows: the package's expert histogram
    (vertical popcounts, the blocks' sums met by atomic adds)."""
    module = load("tensor_details/bitmatrix_details/sum_bitmatrix_rows.py")
    return module.sum_bitmatrix_rows(_Bitmatrix(words), partials_block_size=partials_block_size)
