"""
kdiff-redteam: split reduction whose partials are combined in arrival order
expected-gates: ORD-02=nondeterministic
defect: Each row is split into chunks of 256 reduced separately (split-K style); the chunk
  partials are then added into the output in the order the programs finish, as
  tl.atomic_add does on a GPU. fp32 addition is not associative, so the low bits of the
  result change from call to call. The Triton interpreter runs programs one after another,
  so its atomics are deterministic; this kernel reproduces the GPU's behaviour honestly: a
  second kernel adds the partials sequentially in an arrival order that the wrapper draws
  from OS entropy on every call (the hardware scheduler's order is not seeded by torch
  either). Every value is an fp32 sum of the right terms: all thresholded gates pass.
imitates: atomicAdd-based reductions, the best-known source of run-to-run differences on GPUs
  (PyTorch "Reproducibility" notes: operations that use atomicAdd are nondeterministic;
  Triton split-K matmul and reduction kernels combine partials with tl.atomic_add).
"""
import random

import torch
import torch.nn as nn
import triton
import triton.language as tl

_scheduler = random.SystemRandom()  # which program finishes first is not reproducible


@triton.jit
def chunk_sum_kernel(x_ptr, partial_ptr, n_cols, n_chunks, CHUNKS: tl.constexpr,
                     BLOCK: tl.constexpr):
    # CHUNKS consecutive chunks of BLOCK elements per program, one fp32 partial per chunk.
    row = tl.program_id(0)
    chunk = tl.program_id(1) * CHUNKS + tl.arange(0, CHUNKS)
    offs = chunk[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :]
    x = tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=0.0)
    tl.store(partial_ptr + row * n_chunks + chunk, tl.sum(x, axis=1), mask=chunk < n_chunks)


@triton.jit
def arrival_order_combine_kernel(partial_ptr, order_ptr, out_ptr, n_rows, n_chunks,
                                 ROWS: tl.constexpr):
    # out[row] += partial[row, j] for j in arrival order: what atomic_add leaves behind
    # (ROWS rows per program, each row's partials added one at a time in its own order).
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    ok = rows < n_rows
    acc = tl.zeros((ROWS,), dtype=tl.float32)
    for i in range(n_chunks):
        j = tl.load(order_ptr + rows * n_chunks + i, mask=ok, other=0)
        acc += tl.load(partial_ptr + rows * n_chunks + j, mask=ok, other=0.0)
    tl.store(out_ptr + rows, acc, mask=ok)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        moved = x.movedim(self.dim, -1).contiguous()
        n_cols = moved.shape[-1]
        flat = moved.view(-1, n_cols)
        n_rows = flat.shape[0]
        block = 256
        n_chunks = triton.cdiv(n_cols, block)
        partials = torch.empty((n_rows, n_chunks), device=x.device, dtype=torch.float32)
        chunks = 16  # chunks per program: 4096 elements
        chunk_sum_kernel[(n_rows, triton.cdiv(n_chunks, chunks))](flat, partials, n_cols, n_chunks,
                                                                  CHUNKS=chunks, BLOCK=block)
        order = torch.tensor([_scheduler.sample(range(n_chunks), n_chunks) for _ in range(n_rows)],
                             dtype=torch.int32, device=x.device)
        out = torch.empty(n_rows, device=x.device, dtype=torch.float32)
        rows = 16
        arrival_order_combine_kernel[(triton.cdiv(n_rows, rows),)](partials, order, out, n_rows,
                                                                   n_chunks, ROWS=rows)
        return out.to(x.dtype).view(moved.shape[:-1]).unsqueeze(self.dim)
