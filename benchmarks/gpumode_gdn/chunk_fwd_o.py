"""kdiff's GDN output kernel (kdiff.kernels.gdn.output.output_fwd_kernel) as a GPU MODE
submission for helion/gated_deltanet_chunk_fwd_o_py: per chunk,
o = K^-1/2 (exp(g) (q h) + (causal q k^T exp(g_r - g_s)) v_new); chunks of 64.

    kdiff verify --bench gpumode --device cuda \\
        --problem .audit/gpumode/problems/helion/gated_deltanet_chunk_fwd_o_py \\
        --candidate benchmarks/gpumode_gdn/chunk_fwd_o.py
"""
import torch
import triton

from kdiff.kernels.gdn.chunk import block_k, block_v, launch
from kdiff.kernels.gdn.output import output_fwd_kernel
from kdiff.kernels.gdn.varlen import chunk_layout

CHUNK = 64  # the problem's CHUNK_SIZE


def custom_kernel(data):
    # the kernels index rows of contiguous [B * T, H, D] tensors
    q, k, v_new, h, g = (x.contiguous() for x in data)  # h [B, NT, H, K, V]
    B, T, H, K = q.shape
    V = v_new.shape[-1]
    layout = chunk_layout(B, T, CHUNK, q.device)
    bv = block_v("output_fwd", V)
    o = torch.empty_like(v_new)
    flags = torch.empty(layout.num_chunks, H, triton.cdiv(V, bv), dtype=torch.float32,
                        device=q.device)  # the kernel's non-finite flags, unread here
    output_fwd_kernel[(triton.cdiv(V, bv), layout.num_chunks, H)](
        q, k, v_new, g, h, o, flags, layout.chunk_bounds, K ** -0.5, H, K, V,
        BT=CHUNK, BK=block_k("output_fwd", K), BV=bv, **launch("output_fwd", q.dtype))
    return o
