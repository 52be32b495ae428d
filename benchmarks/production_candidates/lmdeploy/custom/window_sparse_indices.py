"""kdiff-control: lmdeploy build_decode_window_sparse_indices (v4_sparse_indices.py)"""

import lmdeploy_cpu as L
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, kv_lens, start_pos, is_padded):
        module = L.load("v4_sparse_indices")
        return module.build_decode_window_sparse_indices(kv_lens, start_pos, is_padded, 128)
