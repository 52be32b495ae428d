"""
kdiff-redteam: packing memoised by the identity of cu_seqlens
expected-gates: CMP-02=state_carried
defect: The wrapper derives its plan of the packing (here the sequence boundaries, in a
  chunked kernel the chunk indices) from `cu_seqlens` once per tensor object and reuses it
  while the same object comes back. Every trial of the benchmark hands in a new tensor, so
  the plan is always fresh there; a caller that keeps its `cu_seqlens` buffer and rewrites it
  in place between calls (a data loader's pinned buffer, a CUDA graph's static input) gets
  outputs computed with the previous batch's packing.
imitates: flash-linear-attention's `tensor_cache` (fla-core 0.6.0, fla/utils/decorators.py):
  the varlen index helpers in fla/ops/utils/index.py (`prepare_chunk_indices` and friends)
  return the previous result when every argument `is` the previous call's.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from kdiff.kernels.gdn.reference import gated_delta_rule_reference


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._plan = None  # (the cu_seqlens object, the boundaries derived from it)

    def forward(self, q, k, v, g, beta, initial_state, cu_seqlens):
        if self._plan is None or self._plan[0] is not cu_seqlens:
            self._plan = (cu_seqlens, cu_seqlens.clone())
        return gated_delta_rule_reference(q, F.normalize(k, dim=-1), v, F.logsigmoid(g),
                                          torch.sigmoid(beta), initial_state=initial_state,
                                          cu_seqlens=self._plan[1])
