"""flash-linear-attention's chunked simple GLA (fla-core 0.6.0, `chunk_simple_gla`) as a candidate
for kernels/gdn's 2_SimpleGLA problem: a scalar decay per head and token, no delta rule. The
problem's inputs are pre-activation; fla takes the log decay, so the wrapper applies the
problem's `logsigmoid` and nothing else (k is not normalised in this problem; the scale is
fla's default 1/sqrt(K), the problem's; the state [N, H, K, V], fla's default layout). Needs
fla-core importable; on the CPU:

    PYTHONPATH=<fla> kdiff verify --device cpu --fail-on never \\
        --problem kernels/gdn/kernelbench/KernelBench/level3/2_SimpleGLA.py \\
        --candidate benchmarks/fla_candidates/fla_chunk_simple_gla.py

Its backward calls fla's gated `chunk_bwd_dqkwg`, which fla refuses on Hopper with Triton >= 3.4
and < 3.7.1 (fla #640); the guard is bypassed as in fla_chunk_gated_delta_rule.py, so that the
gates judge the results rather than the refusal."""
import fla.ops.common.chunk_o as fla_chunk_o
import torch.nn as nn
import torch.nn.functional as F
from fla.ops.simple_gla import chunk_simple_gla

fla_chunk_o.TRITON_ABOVE_3_7_1 = True  # the guard's only switch: `not TRITON_ABOVE_3_7_1`


class ModelNew(nn.Module):
    def forward(self, q, k, v, g, initial_state):
        o, final_state = chunk_simple_gla(
            q, k, v, F.logsigmoid(g), initial_state=initial_state, output_final_state=True)
        return o, final_state.to(q.dtype)
