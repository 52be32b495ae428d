"""kdiff-control: MInference _triton_mixed_sparse_attention (blocks of 64)"""

import minference_cpu as M
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, q, k, v, seqlens, block_count, block_offset, column_count, column_index):
        ops = M.load("ops.pit_sparse_flash_attention_v2")
        return ops._triton_mixed_sparse_attention(
            q, k, v, seqlens, block_count, block_offset, column_count, column_index, q.shape[-1] ** -0.5
        )
