"""kdiff-control: MInference _triton_block_sparse_attention (blocks of 64)"""

import minference_cpu as M
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, q, k, v, seqlens, block_index):
        ops = M.load("ops.block_sparse_flash_attention")
        return ops._triton_block_sparse_attention(q, k, v, seqlens, block_index, q.shape[-1] ** -0.5)
