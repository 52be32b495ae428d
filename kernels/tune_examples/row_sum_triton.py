"""A Triton row sum with a launch space for `kdiff tune` (KDIFF_TUNE_SPACE), two of whose
switches are fast and wrong:
- ACC_FP16 accumulates in fp16 (u = 2^-11 instead of fp32's 2^-24): PRC-01 rejects it;
- ROWS > 1 has each program sum ROWS rows but launches rows // ROWS programs (floor, not
  cdiv): the last rows % ROWS rows are never written, at every row count that ROWS does not
  divide.
The tuner writes a copy of this file per configuration with KDIFF_TUNE_CONFIG set last."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

KDIFF_TUNE_SPACE = {"BLOCK": [16, 32, 64], "ROWS": [1, 4], "ACC_FP16": [False, True],
                    "num_warps": [1, 4]}
# A 64-column step in one warp spills on a GPU: not a configuration to time.
KDIFF_TUNE_EXCLUDE = [{"BLOCK": 64, "num_warps": 1}]
KDIFF_TUNE_CONFIG = {"BLOCK": 16, "ROWS": 1, "ACC_FP16": False, "num_warps": 4}


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK: tl.constexpr, ROWS: tl.constexpr,
                   ACC_FP16: tl.constexpr):
    acc_dtype = tl.float16 if ACC_FP16 else tl.float32
    for r in range(ROWS):
        row = tl.program_id(0) * ROWS + r
        acc = tl.zeros((BLOCK,), dtype=acc_dtype)
        for c0 in range(0, n_cols, BLOCK):
            c = c0 + tl.arange(0, BLOCK)
            acc += tl.load(x_ptr + row * stride + c, mask=c < n_cols, other=0.0).to(acc_dtype)
        tl.store(out_ptr + row, tl.sum(acc, 0).to(tl.float32))


class ModelNew(nn.Module):
    def forward(self, x):
        cfg = KDIFF_TUNE_CONFIG
        x = x.contiguous()
        out = torch.empty(x.shape[0], device=x.device, dtype=torch.float32)
        grid = (x.shape[0] // cfg["ROWS"],)
        row_sum_kernel[grid](x, out, x.shape[1], x.stride(0), BLOCK=cfg["BLOCK"],
                             ROWS=cfg["ROWS"], ACC_FP16=cfg["ACC_FP16"],
                             num_warps=cfg["num_warps"])
        return out.to(x.dtype)
