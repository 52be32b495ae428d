"""
Chunked Triton simple GLA (GDN's state scans without the delta rule), fwd + bwd.

Not a control yet: a NaN or Inf at token t reaches earlier tokens of its chunk (0 * NaN
inside the chunk's dot products), where the sequential reference is causal, so EXC-01
rejects it (kernels/gdn/NOTES.md). Judge it with
  kdiff run --bench kernelbench --root kernels/gdn/kernelbench
"""
import torch.nn as nn
import torch.nn.functional as F

from kdiff.kernels.gdn import chunk_simple_gla


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v, g, initial_state):
        o, final_state = chunk_simple_gla(
            q, k, v, F.logsigmoid(g), initial_state=initial_state, output_final_state=True,
            chunk_size=64 if q.is_cuda else 16)
        return o, final_state.to(q.dtype)
