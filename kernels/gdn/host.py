"""Host-side pieces shared by the chunked passes (chunk.py, gla.py) and the token-by-token
path (recurrent.py): block sizes, the chunk-local gate cumsum, and state buffers."""
from __future__ import annotations

import functools

import torch
import triton

from kdiff.kernels.gdn.varlen import ChunkLayout
from kdiff.kernels.gdn.wy import chunk_cumsum_kernel

# The largest key head dimension. Every kernel holds whole [*, K] tiles (the state scans a
# [K, BV] state in registers): at K = 1024, fp32, sm_90, Triton 3.9 compiled wy_apply in 342 s
# with 26 kB of spill per thread. fla's chunked kernels assert the same limit.
MAX_HEAD_DIM_K = 256


def check_head_dim(K: int) -> None:
    if K > MAX_HEAD_DIM_K:
        raise ValueError(f"key head dimension {K} > {MAX_HEAD_DIM_K}: the chunked kernels hold "
                         f"whole [*, K] tiles (up to {MAX_HEAD_DIM_K}, as fla's)")


def key_block(K: int) -> int:
    """BK: the tiles hold all of K (K <= MAX_HEAD_DIM_K), at least 16 (a dot's minimum)."""
    return max(16, triton.next_power_of_2(K))


def value_block(V: int, widest: int) -> int:
    """A V-block: `widest`, or less where V itself is smaller (at least 16, a dot's minimum)."""
    return min(widest, max(16, triton.next_power_of_2(V)))


@functools.lru_cache(maxsize=None)
def multiprocessors(device: torch.device) -> int:
    """The GPU's multiprocessor count; 1 off CUDA (the interpreter runs one program at a time)."""
    if device.type != "cuda":
        return 1
    return torch.cuda.get_device_properties(device).multi_processor_count


def block_sizes(K: int, V: int, state_bv: int, parallel_bv: int) -> tuple[int, int, int]:
    """(BK, BV for the state scans, BV for the chunk-parallel kernels)."""
    return key_block(K), value_block(V, state_bv), value_block(V, parallel_bv)


def launch_options(num_warps: int, dtype: torch.dtype, num_stages: int | None = None) -> dict:
    """num_warps, and in fp32 a single pipeline stage: IEEE fp32 products run on the FMA
    units, and the software-pipelined tile buffers of fp32 tiles would exceed sm_90's 227 KB
    of shared memory (GDN's state_bwd at K = V = 128: 241 KB with the default stages)."""
    options = {"num_warps": num_warps}
    if dtype == torch.float32:
        options["num_stages"] = 1
    elif num_stages is not None:
        options["num_stages"] = num_stages
    return options


def chunk_cumsum(g: torch.Tensor, layout: ChunkLayout) -> torch.Tensor:
    """gc: the chunk-local inclusive cumulative sums (fp64) of the log-gates g, [B, T, H] or
    per channel [B, T, H, K] (then the scalar-gate cumsum over [tokens, H * K]), packed as
    [B * T, H(, K)]."""
    gc = torch.empty(g.shape[0] * g.shape[1], *g.shape[2:], dtype=torch.float64,
                     device=g.device)
    width = gc[0].numel()
    BH = min(64, triton.next_power_of_2(width))
    chunk_cumsum_kernel[(layout.num_chunks, triton.cdiv(width, BH))](
        g, gc, layout.chunk_bounds, width, BT=layout.chunk_size, BH=BH)
    return gc


def states(count: int, q: torch.Tensor, V: int, dtype: torch.dtype = torch.float32,
           wanted: bool = True) -> torch.Tensor | None:
    """An empty [count, H, K, V] tensor of states for the heads of q [B, T, H, K] (None
    where not wanted)."""
    if not wanted:
        return None
    return torch.empty(count, *q.shape[2:], V, dtype=dtype, device=q.device)
