"""A Triton row sum split along its columns (split-K) with unmasked loads as a switch, for
`kdiff tune` (KDIFF_TUNE_SPACE); two of its choices are fast and wrong:
- SPLIT = 3 gives each of the row's SPLIT programs n_cols // SPLIT columns (floor): the last
  n_cols % SPLIT columns are never summed;
- MASKED = False drops the loads' mask, which is right only where the block size divides each
  program's columns: past them a program reads the next program's columns again, or memory
  past the tensor.
Each program writes one partial sum; torch adds a row's partials in a fixed order."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

KDIFF_TUNE_SPACE = {"BLOCK": [16, 32], "SPLIT": [1, 2, 3], "MASKED": [True, False]}
KDIFF_TUNE_CONFIG = {"BLOCK": 16, "SPLIT": 1, "MASKED": True}


@triton.jit
def split_sum_kernel(x_ptr, partial_ptr, n_cols, chunk, stride, SPLIT: tl.constexpr,
                     BLOCK: tl.constexpr, MASKED: tl.constexpr):
    row, part = tl.program_id(0), tl.program_id(1)
    start = part * chunk
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for c0 in range(0, chunk, BLOCK):
        c = start + c0 + tl.arange(0, BLOCK)
        if MASKED:
            acc += tl.load(x_ptr + row * stride + c, mask=c < start + chunk, other=0.0)
        else:
            acc += tl.load(x_ptr + row * stride + c)
    tl.store(partial_ptr + row * SPLIT + part, tl.sum(acc, 0))


class ModelNew(nn.Module):
    def forward(self, x):
        cfg = KDIFF_TUNE_CONFIG
        x = x.contiguous()
        rows, n_cols = x.shape
        partial = torch.empty(rows, cfg["SPLIT"], device=x.device, dtype=torch.float32)
        split_sum_kernel[(rows, cfg["SPLIT"])](x, partial, n_cols, n_cols // cfg["SPLIT"],
                                               x.stride(0), SPLIT=cfg["SPLIT"],
                                               BLOCK=cfg["BLOCK"], MASKED=cfg["MASKED"])
        return partial.sum(-1).to(x.dtype)
