"""
kdiff-redteam: int8 W8A8 GEMM that reads -128 as +128
expected-gates: CMP-01=distribution_dependent
defect: The kernel reads its int8 operands as unsigned bytes and sign-extends them by hand
  with `b > 128` where two's complement needs `b >= 128`, so the byte 0x80, int8's -128,
  becomes +128. A symmetric quantizer maps each row's amax to 127 and never makes -128, so the
  benchmark's inputs never hold it; int8 data of any other quantizer (asymmetric, or with
  the full range [-128, 127]) does.
imitates: off-by-one sign extension of bytes loaded as unsigned, as in hand-written int8
  unpacking that widens uint8 loads before the dot product (x86 VNNI's u8 x s8 operands,
  byte-pointer loads in generated kernels), and the range assumption of symmetric int8
  quantization ([-127, 127], Jacob et al., "Quantization and Training of Neural Networks for
  Efficient Integer-Arithmetic-Only Inference", 2018).
"""
import torch
import torch.nn as nn


def _widen(q: torch.Tensor) -> torch.Tensor:
    byte = q.view(torch.uint8).to(torch.int32)
    return torch.where(byte > 128, byte - 256, byte)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor, scale_a: torch.Tensor,
                scale_b: torch.Tensor) -> torch.Tensor:
        acc = _widen(A).to(torch.float32) @ _widen(B).to(torch.float32).t()
        return (acc * scale_a * scale_b).to(torch.bfloat16)
