"""Tile helpers shared by the chunked kernels: the working-precision matrix product, row
loads of packed [tokens, heads, dim] tensors, and the 16 x 16 unit-lower-triangular inverse."""
from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def mm(a, b, DT: tl.constexpr):
    """a @ b with fp32 accumulation. In fp32 (DT float32) the operands stay fp32 and the
    product is IEEE fp32 (never TF32: fp32 means fp32); otherwise both operands are rounded to
    the working dtype first (bf16/fp16 tensor-core products, as the inputs themselves are)."""
    if DT == tl.float32:
        out = tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision="ieee")
    else:
        out = tl.dot(a.to(DT), b.to(DT))
    return out


@triton.jit
def _tile(ptr, row0, end, H, h, D, col0, NR: tl.constexpr, BD: tl.constexpr):
    """Pointers and mask of the [NR, BD] tile (rows row0.., columns col0..) of a packed
    [tokens, H, D] tensor at head h. The base is a 64-bit scalar and the in-tile offsets are
    32-bit (they stay below NR*H*D): 64-bit offset tiles would double the address registers."""
    r = tl.arange(0, NR)
    c = tl.arange(0, BD)
    base = ptr + (row0.to(tl.int64) * H + h) * D + col0
    mask = (row0 + r < end)[:, None] & (col0 + c < D)[None, :]
    return base + (r[:, None] * (H * D) + c[None, :]), mask


@triton.jit
def load_rows(ptr, row0, end, H, h, D, col0, NR: tl.constexpr, BD: tl.constexpr):
    """[NR, BD] tile (rows row0.., columns col0..) of a packed [tokens, H, D] tensor at head
    h; rows at or past `end` and columns past D read as zero."""
    ptrs, mask = _tile(ptr, row0, end, H, h, D, col0, NR, BD)
    return tl.load(ptrs, mask=mask, other=0.0)


@triton.jit
def count_nonfinite(x, mask):
    """How many elements of x, where mask holds, are NaN or +-Inf."""
    bad = ((x != x) | (tl.abs(x) == float("inf"))) & mask
    return tl.sum(tl.ravel(bad.to(tl.int32)), 0)


@triton.jit
def store_flag(flags, index, count):
    """A program's entry of a float32 flag array: NaN where it stored `count` > 0 non-finite
    values, else 0, so that chunk.fallback_flag reads the flags as it reads a result. (Counting
    in the kernel that stores a result saves reading the result again: a min/max over o
    cost 0.08 ms of a 1.66 ms forward at (1, 8192, 96) on the H200.)"""
    tl.store(flags + index, tl.where(count > 0, float("nan"), 0.0))


@triton.jit
def store_rows(ptr, value, row0, end, H, h, D, col0, NR: tl.constexpr, BD: tl.constexpr):
    """Returns how many of the stored elements are non-finite in the stored dtype (a finite
    fp32 value can round to Inf in bf16 or fp16); unused, the count compiles away."""
    ptrs, mask = _tile(ptr, row0, end, H, h, D, col0, NR, BD)
    stored = value.to(ptr.dtype.element_ty)
    tl.store(ptrs, stored, mask=mask)
    return count_nonfinite(stored, mask)


@triton.jit
def load_rows_t(ptr, row0, end, H, h, D, col0, NR: tl.constexpr, BD: tl.constexpr):
    """The transpose [BD, NR] of load_rows' tile, read transposed from memory (a register
    transpose of a dot operand costs a layout conversion through shared memory)."""
    r = tl.arange(0, NR)
    c = tl.arange(0, BD)
    base = ptr + (row0.to(tl.int64) * H + h) * D + col0
    mask = (col0 + c < D)[:, None] & (row0 + r < end)[None, :]
    return tl.load(base + (c[:, None] + r[None, :] * (H * D)), mask=mask, other=0.0)


@triton.jit
def load_head_vec(ptr, row0, end, H, h, NR: tl.constexpr):
    """[NR] fp32 values of a packed [tokens, H] tensor (gates, betas); past `end`: zero."""
    r = tl.arange(0, NR)
    base = ptr + row0.to(tl.int64) * H + h
    return tl.load(base + r * H, mask=row0 + r < end, other=0.0).to(tl.float32)


@triton.jit
def load_log_decay(gc, row0, end, H, h, NR: tl.constexpr):
    """[NR] chunk-local cumulative log-decays (fp64); past `end`: zero."""
    r = tl.arange(0, NR)
    base = gc + row0.to(tl.int64) * H + h
    return tl.load(base + r * H, mask=row0 + r < end, other=0.0)


@triton.jit
def decay(log_ratio):
    """exp of a difference of cumulative log-decays. The cumulative sums are fp64 and are
    subtracted in fp64: in fp32, gc_r - gc_s of two sums of size |gc| loses |gc| u absolutely
    (|gc| ~ 10^4 after one strong gate costs 10^-3 relative in every decay after it), where
    the sequential recurrence multiplies exact per-step factors. The exp itself is fp32."""
    return tl.exp(log_ratio.to(tl.float32))


@triton.jit
def rectangle_sums(Z, BT: tl.constexpr):
    """R_j = sum_{r >= j} sum_{s < j} Z[r, s]: the log-gate derivative collected from a
    matrix whose (r, s) entry carries the decay exp(gc_r - gc_s), which contains g_j exactly
    when s < j <= r. Summing only the terms that contain g_j (instead of row sums minus
    column sums, then a reverse cumsum) has no cancellation of terms that do not."""
    r = tl.arange(0, BT)
    below = tl.cumsum(Z, 0, reverse=True)              # [j, s] = sum_{r >= j} Z[r, s]
    return tl.sum(tl.where(r[None, :] < r[:, None], below, 0.0), 1)


@triton.jit
def _sum_before_last(s1, l1, s2, l2):
    """Combine of (sum of all elements but the last, the last element) pairs: associative."""
    return s1 + l1 + s2, l2


@triton.jit
def exclusive_cumsum_rows(y):
    """E[j] = sum_{r < j} y[r] along axis 0 of a tile of any width, summed directly by a scan
    (no [BT, BT, ..] mask tensor, and no cumsum(y) - y, which would cancel)."""
    e, _ = tl.associative_scan((tl.zeros_like(y), y), 0, _sum_before_last)
    return e


@triton.jit
def exclusive_cumsum(y, BT: tl.constexpr):
    """E_j = sum_{r < j} y_r, summed directly (cumsum(y) - y would cancel)."""
    r = tl.arange(0, BT)
    return tl.sum(tl.where(r[None, :] < r[:, None], y[None, :], 0.0), 1)


@triton.jit
def load_gate_row(gc, row, H, h, K, BK: tl.constexpr):
    """Per-channel gates: the [BK] cumulative log-decays (fp64) of token `row` at head h."""
    rk = tl.arange(0, BK)
    return tl.load(gc + (row.to(tl.int64) * H + h) * K + rk, mask=rk < K, other=0.0)


@triton.jit
def load_gate_rows(gc, start, end, H, h, K, BT: tl.constexpr, BK: tl.constexpr):
    """Per-channel gates (GLA, KDA): the [BT, BK] chunk-local cumulative log-decays (fp64;
    zero past `end` and K) of a packed [tokens, H, K] tensor, and its last valid row [BK]."""
    b_gc = load_rows(gc, start, end, H, h, K, 0, BT, BK)
    return b_gc, load_gate_row(gc, end - 1, H, h, K, BK)


@triton.jit
def pair_decays(b_gc, valid, BT: tl.constexpr):
    """Per-channel gates: E[r, s, c] = exp(gc_rc - gc_sc) for s <= r (both valid), else 0.
    The exponent is selected to 0 before the exp where it could be positive, so nothing
    overflows (the factored exp(gc_r) exp(-gc_s) does after a strong gate)."""
    r = tl.arange(0, BT)
    causal = ((r[:, None] >= r[None, :]) & valid[:, None] & valid[None, :])[:, :, None]
    diff = tl.where(causal, b_gc[:, None, :] - b_gc[None, :, :], 0.0)
    return tl.where(causal, tl.exp(diff.to(tl.float32)), 0.0)


SUB_CHUNK = 16  # per-channel gates: the sub-chunk whose scores are formed pair by pair


@triton.jit
def sub_chunk(gc, start, end, i, H, h, K, BC: tl.constexpr, BK: tl.constexpr):
    """Sub-chunk i (rows start + i BC ..) of a chunk [start, end) under a per-channel gate:
    its first row, row validity, [BC, BK] log-decays gc (fp64) and reference point
    ref = gc at row min(row0, end - 1) (the first row; the last valid row of the chunk when
    the sub-chunk lies wholly past `end`, so that ref <= gc_s for every valid s < row0)."""
    row0 = start + i * BC
    valid = row0 + tl.arange(0, BC) < end
    b_gc = load_rows(gc, row0, end, H, h, K, 0, BC, BK)
    return row0, valid, b_gc, load_gate_row(gc, tl.minimum(row0, end - 1), H, h, K, BK)


@triton.jit
def query_factor(b_gc, ref, valid):
    """exp(gc_r - ref) on the valid rows r of a sub-chunk (0 elsewhere). With g <= 0, gc is
    non-increasing along the chunk, and ref is gc at the sub-chunk's first row, so
    gc_r - ref <= 0: the factor is in (0, 1] (up to the fp64 cumsum's rounding: gla.py's
    docstring)."""
    return tl.where(valid[:, None], tl.exp(tl.where(valid[:, None], b_gc - ref[None, :],
                                                    0.0).to(tl.float32)), 0.0)


@triton.jit
def key_factor(b_gc, ref, before):
    """exp(ref - gc_s) on the rows s selected by `before` (valid rows before the query
    sub-chunk's first row; 0 elsewhere): gc_s >= ref there, so the factor is in (0, 1].
    With query_factor: exp(gc_r - gc_s) = exp(gc_r - ref) exp(ref - gc_s), two factors of
    at most 1, each at least the exact decay (|gc_r - ref|, |ref - gc_s| <= |gc_r - gc_s|): an
    off-diagonal block of scores is one product of the factored tiles and no exp overflows,
    nor underflows where the exact decay does not."""
    return tl.where(before[:, None], tl.exp(tl.where(before[:, None], ref[None, :] - b_gc,
                                                     0.0).to(tl.float32)), 0.0)


@triton.jit
def keys_before(k, gc, start, kend, ref, H, h, K, BT: tl.constexpr, BK: tl.constexpr):
    """[BT, BK] K exp(ref - gc) on the chunk's rows before kend (the query sub-chunk's first
    row, or the chunk's end), 0 elsewhere: the key factor of an off-diagonal score product."""
    before = start + tl.arange(0, BT) < kend
    return (load_rows(k, start, kend, H, h, K, 0, BT, BK).to(tl.float32)
            * key_factor(load_rows(gc, start, kend, H, h, K, 0, BT, BK), ref, before))


@triton.jit
def channel_rectangle_sums(Z, BT: tl.constexpr):
    """rectangle_sums per key channel: R[j, c] = sum_{r >= j} sum_{s < j} Z[r, s, c] for a
    [BT, BT, BK] tensor whose (r, s, c) entry carries the decay exp(gc_rc - gc_sc)."""
    r = tl.arange(0, BT)
    below = tl.cumsum(Z, 0, reverse=True)              # [j, s, c] = sum_{r >= j} Z[r, s, c]
    return tl.sum(tl.where((r[None, :] < r[:, None])[:, :, None], below, 0.0), 1)


@triton.jit
def store_head_vec(ptr, value, row0, end, H, h, NR: tl.constexpr):
    """Returns the non-finite count of the stored values, as store_rows does."""
    r = tl.arange(0, NR)
    base = ptr + row0.to(tl.int64) * H + h
    stored = value.to(ptr.dtype.element_ty)
    tl.store(base + r * H, stored, mask=row0 + r < end)
    return count_nonfinite(stored, row0 + r < end)


@triton.jit
def _substitute_row(neg, X, i, r):
    """Row i of forward substitution: X_i = -L_i + sum_{j<i} (-L_ij) X_j, the rows j < i of X
    final (row i of -L is zero from column i on, so the rows not yet final do not enter)."""
    a = tl.sum(tl.where(r[:, None] == i, neg, 0.0), 0)
    a = a + tl.sum(a[:, None] * X, 0)
    return tl.where(r[:, None] == i, a[None, :], X)


@triton.jit
def unit_lower_inverse16(L):
    """(I + L)^-1 for a strictly lower-triangular 16 x 16 fp32 tile L, by forward substitution:
    with X = (I + L)^-1 - I, row i is X_i = -L_i + sum_{j<i} (-L_ij) X_j. Forward
    substitution is backward stable for triangular systems (Higham, Thm 8.5), unlike
    power-series or repeated-squaring inverses whose terms can outgrow the result."""
    r = tl.arange(0, 16)
    neg = -L
    X = neg
    for i in range(2, 16):
        X = _substitute_row(neg, X, i, r)
    return X + tl.where(r[:, None] == r[None, :], 1.0, 0.0)


@triton.jit
def unit_lower_inverse16x4(L0, L1, L2, L3):
    """unit_lower_inverse16 of four independent tiles, their substitutions interleaved row by
    row: one chain of 14 dependent steps instead of four after one another (each step is two
    reductions, a latency chain; on the H200 the four chains in sequence made GDN's WY inverse
    the forward's slowest kernel, 1.03 ms at (1, 8192, 96))."""
    r = tl.arange(0, 16)
    n0, n1, n2, n3 = -L0, -L1, -L2, -L3
    X0, X1, X2, X3 = n0, n1, n2, n3
    for i in range(2, 16):
        X0 = _substitute_row(n0, X0, i, r)
        X1 = _substitute_row(n1, X1, i, r)
        X2 = _substitute_row(n2, X2, i, r)
        X3 = _substitute_row(n3, X3, i, r)
    eye = tl.where(r[:, None] == r[None, :], 1.0, 0.0)
    return X0 + eye, X1 + eye, X2 + eye, X3 + eye


@triton.jit
def scan_program(cu_seqlens, chunk_offsets, H):
    """A state-scan program's (sequence * H + head) index, head, token span [bos, eos) and
    first chunk index (grid axis 1 = sequences * heads)."""
    i_nh = tl.program_id(1)
    n = i_nh // H
    bos = tl.load(cu_seqlens + n)
    eos = tl.load(cu_seqlens + n + 1)
    first_chunk = tl.load(chunk_offsets + n).to(tl.int64)
    return i_nh, i_nh % H, bos, eos, first_chunk


@triton.jit
def state_tile(K, V, i_v, BK: tl.constexpr, BV: tl.constexpr):
    """Rows, columns, in-state offsets and mask of the [BK, BV] tile (V-block i_v) of a
    [K, V] state."""
    rk = tl.arange(0, BK)
    cv = i_v * BV + tl.arange(0, BV)
    return rk, cv, rk[:, None] * V + cv[None, :], (rk < K)[:, None] & (cv < V)[None, :]


@triton.jit
def load_state(ptr, index, K, V, soffs, smask):
    """The state_tile tile of state `index` of a [.., H, K, V] tensor (index = n * H + h)."""
    return tl.load(ptr + index.to(tl.int64) * (K * V) + soffs, mask=smask, other=0.0)


@triton.jit
def store_state(ptr, index, S, K, V, soffs, smask):
    tl.store(ptr + index.to(tl.int64) * (K * V) + soffs, S.to(ptr.dtype.element_ty), mask=smask)


@triton.jit
def initial_state(ptr, index, K, V, soffs, smask, BK: tl.constexpr, BV: tl.constexpr,
                  GIVEN: tl.constexpr):
    """The fp32 state a scan starts from: state `index` of ptr when GIVEN, else zero."""
    S = tl.zeros([BK, BV], dtype=tl.float32)
    if GIVEN:
        S += load_state(ptr, index, K, V, soffs, smask).to(tl.float32)
    return S


@triton.jit
def chunk_span(bos, eos, c, BT: tl.constexpr):
    """Token span [start, end) of chunk c of the sequence [bos, eos)."""
    start = bos + c * BT
    return start, tl.minimum(start + BT, eos)


@triton.jit
def chunk_rows(bounds, i_c, BT: tl.constexpr):
    """Chunk i_c's token span [start, end) from the layout's bounds table (varlen.ChunkLayout),
    its local row indices r = 0..BT-1 and their validity, start + r < end."""
    start = tl.load(bounds + 2 * i_c)
    end = tl.load(bounds + 2 * i_c + 1)
    r = tl.arange(0, BT)
    return start, end, r, start + r < end
