"""flash-linear-attention's chunked Gated DeltaNet (fla-core 0.6.0, `chunk_gated_delta_rule`)
as a candidate for kernels/gdn's 1_GatedDeltaNet and 5_GatedDeltaNetVarlen problems, so that
kdiff's gates judge fla as they judge kdiff's own kernels (issue 7). Needs fla-core importable:
on the H200 the device session installs the carried wheel (`bash benchmarks/gpu_session.sh
fla_gates`); on the CPU, `PYTHONPATH=<fla> kdiff verify --device cpu ...` (docs/cpu.md: the same
statuses as the H200's).

fla's Hopper guard is bypassed, as for issue 7's reference timings: with Triton >= 3.4 and
< 3.7.1 on Hopper, fla refuses its gated `chunk_bwd_dqkwg` because that Triton "produces
incorrect results" there (fla #640), so as shipped every backward trial would raise. Bypassed,
the backward runs, and the gates judge whether its results are in fact wrong."""
import fla.ops.common.chunk_o as fla_chunk_o
import torch
import torch.nn as nn
import torch.nn.functional as F
from fla.ops.gated_delta_rule import chunk_gated_delta_rule

fla_chunk_o.TRITON_ABOVE_3_7_1 = True  # the guard's only switch: `not TRITON_ABOVE_3_7_1`


class ModelNew(nn.Module):
    def forward(self, q, k, v, g, beta, initial_state, cu_seqlens=None):
        o, final_state = chunk_gated_delta_rule(
            q, F.normalize(k, dim=-1), v, F.logsigmoid(g), torch.sigmoid(beta),
            initial_state=initial_state, output_final_state=True, cu_seqlens=cu_seqlens)
        return o, final_state.to(q.dtype)
