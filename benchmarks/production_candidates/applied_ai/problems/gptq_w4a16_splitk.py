"""applied-ai hunt: a GPTQ W4A16 GEMM (fp16 activations, 4-bit weights packed eight to an
int32 along K, an fp16 scale and a 4-bit zero point per group of 128 rows of K and column):
a @ W with W[k, n] = q[k, n] s[g, n] - (z[g, n] + 1) s[g, n] in fp16, fp32 sums, the result in fp16"""

import torch
import torch.nn as nn

M, K, N, GROUP = 16, 512, 64, 128


def unpack(packed, axis):
    # eight nibbles to an int32, the lowest first, along `axis`
    shifts = torch.arange(0, 32, 4, dtype=torch.int32)
    if axis == 0:
        nibbles = (packed[:, None, :] >> shifts[None, :, None]) & 0xF
        return nibbles.reshape(-1, packed.shape[1])
    nibbles = (packed[:, :, None] >> shifts[None, None, :]) & 0xF
    return nibbles.reshape(packed.shape[0], -1)


class Model(nn.Module):
    def forward(self, a, qweight, scales, qzeros):
        # the weights dequantized in fp16, as GPTQ's kernels hold them
        q = unpack(qweight, 0).half()
        z = unpack(qzeros, 1).half().repeat_interleave(GROUP, dim=0)
        s = scales.repeat_interleave(GROUP, dim=0)
        w = q * s - (z + 1) * s
        return (a.float() @ w.float()).half()


def get_inputs():
    a = torch.randn(M, K).half()
    qweight = torch.randint(-(2**31), 2**31 - 1, (K // 8, N), dtype=torch.int32)
    scales = (0.01 + 0.01 * torch.rand(K // GROUP, N)).half()
    qzeros = torch.randint(-(2**31), 2**31 - 1, (K // GROUP, N // 8), dtype=torch.int32)
    return [a, qweight, scales, qzeros]


def get_init_inputs():
    return []
