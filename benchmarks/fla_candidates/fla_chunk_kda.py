"""flash-linear-attention's chunked Kimi Delta Attention (fla-core 0.6.0, `chunk_kda`) as a
candidate for kernels/gdn's 4_KDA problem: one decay per key channel with the delta rule. The
problem's inputs are pre-activation; the wrapper applies the problem's activations (k
L2-normalised, g = logsigmoid, beta = sigmoid) and passes them with fla's in-kernel activations
off (their defaults: `use_qk_l2norm_in_kernel` would normalise q too, `use_gate_in_kernel` is
Kimi's softplus gate, not the problem's). The scale is fla's default 1/sqrt(K), the problem's;
the state [N, H, K, V], fla's default layout. fla asserts an fp32 initial state: the state is
passed as fp32 (a no-op for fp32 problems, exact for fp16/bf16) and the final state returned in
the inputs' dtype. Needs fla-core importable; on the CPU:

    PYTHONPATH=<fla> kdiff verify --device cpu --fail-on never \\
        --problem kernels/gdn/kernelbench/KernelBench/level3/4_KDA.py \\
        --candidate benchmarks/fla_candidates/fla_chunk_kda.py"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from fla.ops.kda import chunk_kda


class ModelNew(nn.Module):
    def forward(self, q, k, v, g, beta, initial_state):
        o, final_state = chunk_kda(
            q, F.normalize(k, dim=-1), v, F.logsigmoid(g), torch.sigmoid(beta),
            initial_state=initial_state.float(), output_final_state=True)
        return o, final_state.to(q.dtype)
