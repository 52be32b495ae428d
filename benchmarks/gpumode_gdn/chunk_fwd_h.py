"""kdiff's GDN state scan (kdiff.kernels.gdn.state.state_fwd_kernel) as a GPU MODE submission
for helion/gated_deltanet_chunk_fwd_h_py: per (batch, head), h_c stored before chunk c,
v_new = u - w h_c, h_{c+1} = exp(g_last) h_c + k^T (exp(g_last - g) v_new); chunks of 64.

    kdiff verify --bench gpumode --device cuda \\
        --problem .audit/gpumode/problems/helion/gated_deltanet_chunk_fwd_h_py \\
        --candidate benchmarks/gpumode_gdn/chunk_fwd_h.py
"""
import torch
import triton

from kdiff.kernels.gdn.chunk import few_programs, launch, scan_bv
from kdiff.kernels.gdn.host import key_block, states
from kdiff.kernels.gdn.state import state_fwd_kernel
from kdiff.kernels.gdn.varlen import chunk_layout

CHUNK = 64  # the problem's CHUNK_SIZE


def custom_kernel(data):
    # the kernels index rows of contiguous [B * T, H, D] tensors
    k, w, u, g = (x.contiguous() for x in data)  # g: the chunk-local cumulative gate
    B, T, H, K = k.shape
    V = u.shape[-1]
    layout = chunk_layout(B, T, CHUNK, k.device)
    few = few_programs("state_fwd", B * H, V, k.device)
    bv = scan_bv("state_fwd", few, V)
    hbuf = states(layout.num_chunks, k, V, k.dtype)  # [B * NT, H, K, V]
    v_new = torch.empty_like(u)
    state_fwd_kernel[(triton.cdiv(V, bv), B * H)](
        k, w, u, g, None, hbuf, v_new, None, layout.cu_seqlens, layout.chunk_offsets, H, K, V,
        BT=CHUNK, BK=key_block(K), BV=bv, HAS_H0=False, STORE_FINAL=False, DELTA=True,
        **launch("state_fwd", k.dtype, few))
    return hbuf.view(B, T // CHUNK, H, K, V), v_new
