"""flashinfer hunt: get_batch_indices_positions (each appended token's request and its position)"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, append_indptr, seq_lens):
        counts = append_indptr[1:] - append_indptr[:-1]
        batch = torch.repeat_interleave(torch.arange(counts.numel(), dtype=torch.int32), counts)
        starts = torch.repeat_interleave(append_indptr[:-1], counts)
        ends = torch.repeat_interleave(append_indptr[1:], counts)
        lens = torch.repeat_interleave(seq_lens, counts)
        offsets = torch.arange(int(append_indptr[-1]), dtype=torch.int32)
        return batch, (offsets - starts + lens - (ends - starts)).to(torch.int32)


def get_inputs():
    return [torch.tensor([0, 3, 3, 200, 205], dtype=torch.int32),
            torch.tensor([10, 4, 300, 5], dtype=torch.int32)]


def get_init_inputs():
    return []
