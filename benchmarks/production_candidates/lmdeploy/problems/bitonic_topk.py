"""lmdeploy hunt: top-k indices of ragged rows (the sparse-attention indexer's selection):
for each token the k = 16 best of its first kv_len scores, best first, as int32 ids; a row
shorter than k is filled with -1, and so is a pick whose score is at or below the threshold
-1e6 (the kernel's default: such scores count as masked out). A length past the row is no
input of the op"""

import torch
import torch.nn as nn

KV_LENS = (100, 37, 16, 5, 64, 1)
N, K = 100, 16
THRESHOLD = -1e6


class Model(nn.Module):
    def forward(self, scores, kv_lens):
        out = torch.full((scores.shape[0], K), -1, dtype=torch.int32)
        for row, length in enumerate(kv_lens.tolist()):
            assert length <= scores.shape[1], "a row holds its kv_len scores"
            best = scores[row, :length].topk(min(K, length))
            picked = torch.where(best.values > THRESHOLD, best.indices, -1)
            out[row, : picked.numel()] = picked.to(torch.int32)
        return out


def get_inputs():
    return [torch.randn(len(KV_LENS), N), torch.tensor(KV_LENS, dtype=torch.int32)]


def get_init_inputs():
    return []
