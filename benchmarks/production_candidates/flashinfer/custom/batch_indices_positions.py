"""kdiff-control: flashinfer get_batch_indices_positions_kernel, launched as flashinfer's page.py does"""

import flashinfer_cpu as F
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, append_indptr, seq_lens):
        n = int(append_indptr[-1])
        batch = torch.empty(n, dtype=torch.int32, device=append_indptr.device)
        positions = torch.empty(n, dtype=torch.int32, device=append_indptr.device)
        F.load("page").get_batch_indices_positions_kernel[(seq_lens.numel(),)](
            append_indptr, seq_lens, batch, positions, num_stages=2)
        return batch, positions
