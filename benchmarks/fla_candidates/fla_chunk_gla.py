"""flash-linear-attention's chunked GLA (fla-core 0.6.0, `chunk_gla`) as a candidate for
kernels/gdn's 3_GLA problem: one decay per key channel, no delta rule. The problem's inputs
are pre-activation; fla takes the log decay [B, T, H, K], so the wrapper applies the problem's
`logsigmoid` and nothing else (k is not normalised in this problem; the scale is fla's default
1/sqrt(K), the problem's; the state [N, H, K, V], fla's default layout). fla asserts an fp32
initial state: the state is passed as fp32 (a no-op for fp32 problems, exact for fp16/bf16)
and the final state returned in the inputs' dtype. Needs fla-core importable; on the CPU:

    PYTHONPATH=<fla> kdiff verify --device cpu --fail-on never \\
        --problem kernels/gdn/kernelbench/KernelBench/level3/3_GLA.py \\
        --candidate benchmarks/fla_candidates/fla_chunk_gla.py"""
import torch.nn as nn
import torch.nn.functional as F
from fla.ops.gla import chunk_gla


class ModelNew(nn.Module):
    def forward(self, q, k, v, g, initial_state):
        o, final_state = chunk_gla(
            q, k, v, F.logsigmoid(g), initial_state=initial_state.float(), output_final_state=True)
        return o, final_state.to(q.dtype)
