"""The inputs of the KernelBench level-3 recurrence problems (kernelbench/KernelBench/level3:
Gated DeltaNet, simple GLA, GLA, KDA). Each problem file keeps its own sizes (module constants, read
by get_inputs) and its Model, the reference."""
from __future__ import annotations

import torch

from kdiff.kernels.gdn.host import check_head_dim


def within_shape_class(k: torch.Tensor) -> None:
    """The problems' shape class: key head dimensions up to 256 (the references raise past it,
    so kdiff's CMP-03 does not judge such sizes). Real GDN, GLA and KDA layers use 64 to 256,
    and chunked kernels hold whole [*, K] tiles: fla's assert K <= 256, and ours raise past it
    (host.check_head_dim); through the CPU interpreter K = 1000 runs, on a GPU it takes minutes
    of compiling per kernel and spills."""
    check_head_dim(k.shape[-1])


def recurrence_inputs(batch_size: int, seq_len: int, num_heads: int, head_dim_k: int,
                      head_dim_v: int, *, per_channel_gate: bool = False,
                      beta: bool = False) -> list[torch.Tensor]:
    """[q, k, v, g, (beta,) initial_state], pre-activation and drawn in that order: g is
    [B, T, H] (or [B, T, H, K] per channel) and shifted by 2.0, so that logsigmoid(g) gives
    decays near 0.9; beta [B, T, H] goes through a sigmoid; initial_state is [B, H, K, V]."""
    q = torch.randn(batch_size, seq_len, num_heads, head_dim_k)
    k = torch.randn(batch_size, seq_len, num_heads, head_dim_k)
    v = torch.randn(batch_size, seq_len, num_heads, head_dim_v)
    gate_dims = (head_dim_k,) if per_channel_gate else ()
    g = torch.randn(batch_size, seq_len, num_heads, *gate_dims) + 2.0
    betas = [torch.randn(batch_size, seq_len, num_heads)] if beta else []
    initial_state = torch.randn(batch_size, num_heads, head_dim_k, head_dim_v)
    return [q, k, v, g, *betas, initial_state]
