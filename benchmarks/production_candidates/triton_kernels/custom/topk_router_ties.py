"""kdiff-control: triton_kernels _topk_forward (k 4, softmax of the chosen logits)"""

import torch.nn as nn
import triton_kernels_cpu as T


class ModelNew(nn.Module):
    def forward(self, logits):
        values, experts = T.topk(logits, 4, apply_softmax=True)
        return values, experts.long()
