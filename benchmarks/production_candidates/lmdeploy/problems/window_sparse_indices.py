"""lmdeploy hunt: DeepSeek-V4's decode sliding-window indices (integers only): for each sequence
its last min(kv_len, 128) positions in a ring buffer of 128 per sequence, as indices into the
flattened buffer, -1 past the window; the window's length (1 for a padded slot), the ring's
write position, and the disabled layers' all -1 indices and lengths (1 for a padded slot)"""

import torch
import torch.nn as nn

KV_LENS = (5, 130, 64, 1)
PADDED = (False, False, True, False)
WINDOW, BLOCK = 128, 128


class Model(nn.Module):
    def forward(self, kv_lens, start_pos, is_padded):
        bsz = kv_lens.numel()
        offs = torch.arange(WINDOW)
        window_len = kv_lens.long().clamp(max=WINDOW)
        ring = (kv_lens.long()[:, None] - window_len[:, None] + offs) % WINDOW
        vals = torch.where(
            offs < window_len[:, None], torch.arange(bsz)[:, None] * WINDOW + ring, -1
        )
        topk_length = torch.where(is_padded, 1, window_len)
        disabled = torch.full((bsz, 1, BLOCK), -1)
        return (
            vals[:, None, :].int(),
            topk_length.int(),
            (start_pos.long() % WINDOW).int(),
            disabled.int(),
            is_padded.int(),
        )


def get_inputs():
    kv = torch.tensor(KV_LENS, dtype=torch.int32)
    return [kv, kv - 1, torch.tensor(PADDED)]


def get_init_inputs():
    return []
