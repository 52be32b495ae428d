import torch
import torch.nn as nn


class Model(nn.Module):
    """A GEMM with packed int4 weights: x (M, K) in fp32; W (N, K) quantized group-wise along K
    to signed 4-bit integers, packed two per byte in qweight (N, K / 2) uint8 (element 2j in
    the low nibble of byte j, element 2j + 1 in the high one, each in two's complement, -8..7),
    with one fp16 scale per group of GROUP = 2 * GROUP_BYTES consecutive elements in scales
    (N, K / GROUP). Dequantized in fp32 (exact: 4 x 11 significant bits), multiplied with fp32
    accumulation, the result in fp32: C = x @ (q * scale)^T."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, qweight: torch.Tensor,
                scales: torch.Tensor) -> torch.Tensor:
        n, groups = scales.shape
        packed = qweight.view(torch.int8)
        low = (packed << 4) >> 4  # arithmetic shifts sign-extend each nibble
        high = packed >> 4
        q = torch.stack([low, high], dim=-1).reshape(n, groups, -1)
        w = (q.to(torch.float32) * scales.to(torch.float32).unsqueeze(-1)).reshape(n, -1)
        return x @ w.t()


# Sizes in whole bytes and groups, so that every size CMP-03 holds out keeps the packing valid:
# K is even and a multiple of the group size at any GROUPS and GROUP_BYTES.
M = 32
N = 48
GROUPS = 4
GROUP_BYTES = 16
K = 2 * GROUP_BYTES * GROUPS


def get_inputs():
    x = torch.randn(M, K)
    w = torch.randn(N, GROUPS, 2 * GROUP_BYTES) / K ** 0.5
    # Symmetric group-wise quantization (as GPTQ and AWQ make it without zero points): the
    # group's amax maps to 7.
    scales = (w.abs().amax(-1) / 7.0).to(torch.float16)
    q = (w / scales.float().unsqueeze(-1)).round().clamp(-7, 7).to(torch.int8)
    q = q.reshape(N, GROUPS * GROUP_BYTES, 2)
    qweight = ((q[..., 0] & 0xF) | (q[..., 1] << 4)).view(torch.uint8)
    return [x, qweight, scales]


def get_init_inputs():
    return []
