"""
Chunked Triton Gated DeltaNet (WY inverse, state scans, fwd + training bwd).

Not a control yet: a NaN or Inf at token t reaches earlier tokens of its chunk (0 * NaN
inside the chunk's dot products), where the sequential reference is causal, so EXC-01
rejects it (kernels/gdn/NOTES.md). Judge it with
  kdiff run --bench kernelbench --root kernels/gdn/kernelbench
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from kdiff.kernels.gdn import chunk_gated_delta_rule


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v, g, beta, initial_state):
        k = F.normalize(k, dim=-1)
        # chunks of 64 on a GPU; 16 on the CPU interpreter keeps the tiny problem quick
        o, final_state = chunk_gated_delta_rule(
            q, k, v, F.logsigmoid(g), torch.sigmoid(beta), initial_state=initial_state,
            output_final_state=True, chunk_size=64 if q.is_cuda else 16)
        return o, final_state.to(q.dtype)
