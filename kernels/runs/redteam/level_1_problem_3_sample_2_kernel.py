"""
kdiff-redteam: split reduction combined with tl.atomic_add
expected-gates: ORD-02=nondeterministic
defect: Each row is split into 256-element chunks, one program per chunk, and every program
  adds its partial sum into the output with tl.atomic_add. On a GPU the programs finish in a
  scheduling-dependent order and fp32 addition is not associative, so the low bits of the
  result vary between calls. (On the CPU kdiff's interpreter runs a launch's programs in a
  drawn order, another each launch, so the same happens there; sample 1 reproduces the
  arrival order by hand.)
imitates: atomicAdd-based reductions (PyTorch "Reproducibility" notes: operations that use
  atomicAdd are nondeterministic; Triton split-K kernels combine partials with
  tl.atomic_add).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def atomic_row_sum_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=0.0)
    tl.atomic_add(out_ptr + row, tl.sum(x, axis=0))


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        moved = x.movedim(self.dim, -1).contiguous()
        n_cols = moved.shape[-1]
        flat = moved.view(-1, n_cols)
        out = torch.zeros(flat.shape[0], device=x.device, dtype=torch.float32)
        block = 256  # 16 partials a row at the benchmark size: their order shows
        atomic_row_sum_kernel[(flat.shape[0], triton.cdiv(n_cols, block))](flat, out, n_cols,
                                                                            BLOCK=block)
        return out.to(x.dtype).view(moved.shape[:-1]).unsqueeze(self.dim)
