"""Chunk bookkeeping for packed batches. Every call works on the packed form: tensors
[B, T, H, D] are viewed as [B*T, H, D] (same memory) with sequence boundaries
cu_seqlens = [0, T, 2T, ..., B*T]; variable-length input gives its own cu_seqlens with B == 1.
Chunks never cross a sequence boundary; the last chunk of a sequence may be short."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import torch


@dataclass
class ChunkLayout:
    cu_seqlens: torch.Tensor      # int32 [N + 1] token offsets of the sequences
    chunk_offsets: torch.Tensor   # int32 [N + 1] index of each sequence's first chunk
    chunk_bounds: torch.Tensor    # int32 [NC, 2] first token and end token of every chunk
    num_seqs: int
    num_chunks: int
    chunk_size: int


def chunk_layout(batch: int, seqlen: int, chunk_size: int, device: torch.device,
                 cu_seqlens: torch.Tensor | None = None) -> ChunkLayout:
    if cu_seqlens is None:
        # equal lengths: built once per shape (no host-to-device copy on every call)
        return _uniform_layout(batch, seqlen, chunk_size, device)
    return _layout(_packed_lengths(batch, seqlen, cu_seqlens), chunk_size, device)


@lru_cache(maxsize=64)
def _uniform_layout(batch: int, seqlen: int, chunk_size: int, device: torch.device) -> ChunkLayout:
    return _layout([seqlen] * batch, chunk_size, device)


def _packed_lengths(batch: int, seqlen: int, cu_seqlens: torch.Tensor) -> list[int]:
    if batch != 1:
        raise ValueError(f"cu_seqlens packs sequences along T: batch must be 1, got {batch}")
    cu = [int(x) for x in cu_seqlens.tolist()]
    if cu[0] != 0 or cu[-1] != seqlen or any(b < a for a, b in zip(cu, cu[1:])):
        raise ValueError(f"cu_seqlens must rise from 0 to T={seqlen}, got {cu}")
    return [b - a for a, b in zip(cu, cu[1:])]


def _layout(lengths: list[int], chunk_size: int, device: torch.device) -> ChunkLayout:
    starts, offsets, bounds = [0], [0], []
    for length in lengths:
        bos = starts[-1]
        starts.append(bos + length)
        count = -(-length // chunk_size)
        offsets.append(offsets[-1] + count)
        bounds.extend((bos + c * chunk_size, min(bos + (c + 1) * chunk_size, bos + length))
                      for c in range(count))
    as_int = dict(dtype=torch.int32, device=device)
    return ChunkLayout(
        cu_seqlens=torch.tensor(starts, **as_int),
        chunk_offsets=torch.tensor(offsets, **as_int),
        chunk_bounds=torch.tensor(bounds, **as_int).reshape(-1, 2),
        num_seqs=len(lengths), num_chunks=offsets[-1], chunk_size=chunk_size)
