"""kdiff's GDN WY application (kdiff.kernels.gdn.wy.wy_apply_kernel) as a GPU MODE submission
for helion/gated_deltanet_recompute_w_u_py: per chunk, w = A (beta exp(g) k), u = A (beta v),
A the chunk's [64, 64] inverse; chunks of 64.

    kdiff verify --bench gpumode --device cuda \\
        --problem .audit/gpumode/problems/helion/gated_deltanet_recompute_w_u_py \\
        --candidate benchmarks/gpumode_gdn/recompute_w_u.py
"""
import torch

from kdiff.kernels.gdn.chunk import block_k, block_v, launch
from kdiff.kernels.gdn.varlen import chunk_layout
from kdiff.kernels.gdn.wy import wy_apply_kernel

CHUNK = 64  # the problem's CHUNK_SIZE


def custom_kernel(data):
    # the kernels index rows of contiguous [B * T, H, D] tensors
    k, v, beta, A, g = (x.contiguous() for x in data)  # A [B, T, H, 64]
    B, T, H, K = k.shape
    V = v.shape[-1]
    layout = chunk_layout(B, T, CHUNK, k.device)
    w = torch.empty_like(k)
    u = torch.empty_like(v)
    wy_apply_kernel[(layout.num_chunks, H)](
        k, v, beta, g, A, w, u, layout.chunk_bounds, H, K, V, BT=CHUNK,
        BK=block_k("wy_apply", K), BV=block_v("wy_apply", V), **launch("wy_apply", k.dtype))
    return w, u
