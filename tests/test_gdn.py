"""Chunked Gated DeltaNet (kdiff.kernels.gdn) against the sequential float64 oracle, through
the Triton interpreter in fp32 on tiny shapes.

Error model (the bound is derived here, not fitted to the measurement). In fp32, u = 2^-24.
Along one sequence of length T cut into chunks of C, one chunk step computes: the WY inverse
by forward substitution (depth C), W and Utld = A(...) (length-C contractions), U = Utld - W S
(length K) and S' = exp(gc_C) S + K^T U (length C); the output adds Q S (K) and P U (C). The
backward scan is the adjoint of the same steps, plus contractions over V (dP = dO U^T, dA, the
gate terms), the VJP of the inverse (dL = -A^T dA A^T: two more length-C products) and the
reverse cumulative sum of dg (C). With normalised k, beta in (0, 1) and g <= 0, every step's
map S -> a (I - beta k k^T) S is non-expansive (eigenvalues a(1 - beta) and a, both in [0, 1]),
and so is its adjoint: rounding errors made at one step are not amplified by later steps, and
they add up over the steps. Hence a first-order worst-case bound, normwise per tensor:

    max|err| <= gamma_N * max|oracle|,  N = (ceil(T / C) + 1) * (K + V + 4 C)

which covers forward (N_fwd = ceil(T/C)(K + 3C) + K + C) and backward alike, with
gamma_N = N u / (1 - N u) (kdiff.numerics.tolerance.gamma, the worst-case model).

The token-by-token path (recurrent.py; taken when a chunked result holds a NaN or an Inf)
forms the reference's own operations, with fp32 products and every contraction accumulated in
fp64 and rounded once: at most 8 roundings per token along the state (forward: S d, the
contraction k^T S1, v - c, k x^T, beta E, S1 + F) and along its adjoint (backward), through
the same non-expansive maps, so they add over the T tokens; each gradient element is then one
contraction of up to K V fp32 products (dbeta, dg; dq and dk: V), each rounded once. Hence
N_rec = 8 T + K V in the same normwise bound.
"""
from __future__ import annotations

import inspect
import json
import math
import os
import subprocess
import sys

os.environ["TRITON_INTERPRET"] = "1"  # before kdiff.kernels.gdn decorates its kernels

import pytest
import torch
import torch.nn.functional as F

from kdiff.kernels.gdn import chunk as gdn_chunk
from kdiff.kernels.gdn import (
    chunk_gated_delta_rule,
    chunk_gla,
    chunk_kda,
    chunk_simple_gla,
    gated_delta_rule_reference,
    gated_recurrence,
)
from kdiff.kernels.gdn import recurrent as gdn_recurrent
from kdiff.kernels.gdn import wy as gdn_wy
from kdiff.kernels.gdn.fallback import FLAG_BLOCK
from kdiff.kernels.gdn.varlen import chunk_layout
from kdiff.numerics.oracle import run_oracle
from kdiff.numerics.tolerance import gamma, unit_roundoff

NAMES = ("o", "final_state", "dq", "dk", "dv", "dg", "dbeta", "dh0")
# The 64-token chunk builds and the whole-range sweeps take 5-20 s each through the
# interpreter: `slow` (run by .ci/run after the default suite); every test keeps a fast case.
SLOW = pytest.mark.slow


def gdn_inputs(B, T, H, K, V, seed):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(B, T, H, K, generator=gen)
    k = F.normalize(torch.randn(B, T, H, K, generator=gen), dim=-1)
    v = torch.randn(B, T, H, V, generator=gen)
    g = F.logsigmoid(torch.randn(B, T, H, generator=gen) + 2.0)  # decays in (0, 1)
    beta = torch.rand(B, T, H, generator=gen)
    h0 = torch.randn(B if B > 1 else 1, H, K, V, generator=gen)
    return [q, k, v, g, beta, h0]


def cotangents(o_shape, ht_shape, seed):
    gen = torch.Generator().manual_seed(seed + 1)
    return torch.randn(o_shape, generator=gen), torch.randn(ht_shape, generator=gen)


def run(fn, inputs, dtype, cu_seqlens=None, **kw):
    """Forward with the final state, backward with fixed cotangents; returns the 8 tensors."""
    xs = [x.to(dtype).clone().requires_grad_() for x in inputs]
    o, ht = fn(*xs[:5], initial_state=xs[5], cu_seqlens=cu_seqlens, **kw)
    do, dht = cotangents(o.shape, ht.shape, 0)
    torch.autograd.backward([o, ht], [do.to(dtype), dht.to(dtype)])
    return [o.detach(), ht.detach()] + [x.grad for x in xs]


def always_fall_back(*tensors):
    """chunk.fallback_flag forced to 1: the token-by-token path, on finite inputs too."""
    device = next(t for t in tensors if t is not None).device
    return torch.ones(1, dtype=torch.int32, device=device)


def record_fallbacks(monkeypatch) -> list:
    """Every fallback decision of the calls that follow, as ints. A test of the chunked
    kernels asserts they are all 0: a chunked result gone non-finite (a slice dropped, memory
    left unwritten) is otherwise recomputed by the token-by-token path, and passes."""
    decisions = []
    real = gdn_chunk.fallback_flag

    def recording(*tensors):
        flag = real(*tensors)
        decisions.append(int(flag.item()))
        return flag
    monkeypatch.setattr(gdn_chunk, "fallback_flag", recording)
    return decisions


def triton_gdn(*args, chunk_size, **kw):
    return chunk_gated_delta_rule(*args, output_final_state=True, chunk_size=chunk_size, **kw)


def depth(T, K, V, C):
    return (math.ceil(T / C) + 1) * (K + V + 4 * C)


def depth_recurrent(T, K, V):
    return 8 * T + K * V


def assert_within_bound(got, oracle, N, judged=None):
    """judged: per tensor, a mask of the elements compared (None: all). A tensor that is
    None in the oracle (no such gradient) is skipped."""
    bound = gamma(N, unit_roundoff(torch.float32))
    for name, a, b, j in zip(NAMES, got, oracle, judged or [None] * len(oracle)):
        if b is None:
            continue
        j = torch.ones_like(b, dtype=torch.bool) if j is None else j
        if not j.any():
            continue
        err = (a.double() - b)[j].abs().max().item()
        scale = b[j].abs().max().item()
        assert err <= bound * scale, (f"{name}: max error {err:.3e} > bound {bound * scale:.3e} "
                                      f"(N={N}, relative {err / scale:.3e} vs {bound:.3e})")


@pytest.mark.parametrize("T,C", [(40, 16), pytest.param(70, 64, marks=SLOW)])
def test_forward_and_gradients_match_float64_oracle(T, C):
    B, H, K, V = 2, 2, 16, 32
    inputs = gdn_inputs(B, T, H, K, V, seed=T)
    got = run(lambda *a, **kw: triton_gdn(*a, chunk_size=C, **kw), inputs, torch.float32)
    oracle = run(gated_delta_rule_reference, inputs, torch.float64)
    assert_within_bound(got, oracle, depth(T, K, V, C))


@SLOW
def test_packed_sequences_equal_separate_calls_bitwise():
    lengths, H, K, V, C = (19, 37), 1, 16, 16, 16
    T = sum(lengths)
    inputs = gdn_inputs(1, T, H, K, V, seed=7)
    inputs[5] = torch.randn(len(lengths), H, K, V, generator=torch.Generator().manual_seed(8))
    cu = torch.tensor([0, lengths[0], T])
    packed = run(lambda *a, **kw: triton_gdn(*a, chunk_size=C, **kw), inputs, torch.float32, cu)
    for n, (bos, eos) in enumerate([(0, lengths[0]), (lengths[0], T)]):
        part = [x[:, bos:eos] for x in inputs[:5]] + [inputs[5][n:n + 1]]
        xs = [x.clone().requires_grad_() for x in part]
        o, ht = triton_gdn(*xs[:5], initial_state=xs[5], chunk_size=C)
        # the packed run's cotangents, restricted to this sequence
        do, dht = cotangents(packed[0].shape, packed[1].shape, 0)
        torch.autograd.backward([o, ht], [do[:, bos:eos], dht[n:n + 1]])
        assert torch.equal(o.detach(), packed[0][:, bos:eos])
        assert torch.equal(ht.detach(), packed[1][n:n + 1])
        for x, full in zip(xs[:5], packed[2:7]):
            assert torch.equal(x.grad, full[:, bos:eos])
        assert torch.equal(xs[5].grad, packed[7][n:n + 1])
    oracle = run(gated_delta_rule_reference, inputs, torch.float64, cu)
    assert_within_bound(packed, oracle, depth(max(lengths), K, V, C))


def test_without_initial_state_and_final_state():
    inputs = gdn_inputs(1, 24, 2, 16, 16, seed=3)
    o = chunk_gated_delta_rule(*inputs[:5], chunk_size=16)
    assert isinstance(o, torch.Tensor)
    ref, _ = gated_delta_rule_reference(*[x.double() for x in inputs[:5]])
    bound = gamma(depth(24, 16, 16, 16), unit_roundoff(torch.float32))
    assert (o.double() - ref).abs().max() <= bound * ref.abs().max()


@pytest.mark.parametrize("split_local_du", [True, False])
def test_two_runs_are_bitwise_identical(split_local_du, monkeypatch):
    """Also runs the backward scan with P^T dO computed inside it (the variant not default)."""
    monkeypatch.setattr(gdn_chunk, "SPLIT_LOCAL_DU", split_local_du)
    inputs = gdn_inputs(1, 20, 1, 16, 16, seed=5)
    first = run(lambda *a, **kw: triton_gdn(*a, chunk_size=16, **kw), inputs, torch.float32)
    second = run(lambda *a, **kw: triton_gdn(*a, chunk_size=16, **kw), inputs, torch.float32)
    for name, a, b in zip(NAMES, first, second):
        assert torch.equal(a, b), name
    oracle = run(gated_delta_rule_reference, inputs, torch.float64)
    assert_within_bound(first, oracle, depth(20, 16, 16, 16))


@SLOW
def test_simple_gla_without_delta_rule_matches_oracle():
    """The same stages with the delta rule compiled out; S -> exp(g) S is non-expansive, so
    the same error model holds."""
    B, T, H, K, V, C = 2, 40, 2, 16, 32, 16
    q, k, v, g, _, h0 = gdn_inputs(B, T, H, K, V, seed=11)
    inputs = [q, k, v, g, h0]

    def fwd_bwd(fn, dtype):
        xs = [x.to(dtype).clone().requires_grad_() for x in inputs]
        o, ht = fn(*xs[:4], initial_state=xs[4])
        do, dht = cotangents(o.shape, ht.shape, 0)
        torch.autograd.backward([o, ht], [do.to(dtype), dht.to(dtype)])
        return [o.detach(), ht.detach()] + [x.grad for x in xs]

    got = fwd_bwd(lambda *a, **kw: chunk_simple_gla(*a, output_final_state=True, chunk_size=C,
                                                    **kw), torch.float32)
    oracle = fwd_bwd(lambda *a, **kw: gated_recurrence(*a, None, **kw), torch.float64)
    bound = gamma(depth(T, K, V, C), unit_roundoff(torch.float32))
    for name, a, b in zip(("o", "final_state", "dq", "dk", "dv", "dg", "dh0"), got, oracle):
        assert (a.double() - b).abs().max() <= bound * b.abs().max(), name



@pytest.mark.parametrize("C,lengths", [(16, (17, 23)), pytest.param(64, (70, 45), marks=SLOW)])
def test_gla_per_channel_gate_matches_oracle(C, lengths):
    """GLA (gate [B, T, H, K]), packed sequences (neither length a multiple of the chunk; the
    initial state is the second input of the pair). Every per-channel decay is in (0, 1], so
    S -> diag(exp(g)) S is non-expansive and the error model above holds, N = depth(T, K, V,
    C). Per chunk: the scan and Q S as for simple GLA; the scores of a diagonal 16-token
    sub-chunk block pair by pair (a length-K sum of products with one fp32 exp each), of an
    off-diagonal block as one product of the factored tiles (a length-K contraction of two
    products with one exp each: two roundings more per term than the pair form, inside the 4C
    allowance); P V and the backward's score products are length-C contractions (the factored
    blocks of a row summed first: at most C terms). The per-channel dg sums of the score terms
    collect each pair (r, s) with s < j <= r once: a rectangle sum in the diagonal block,
    cumulative sums (16) of length-C contractions, and the spanning blocks' column sums (16
    rows of length-C contractions, then at most 3 blocks): a chain of at most
    C + 2 * 16 + 3 < 4C roundings, the same count as GDN's scalar rectangle sum at C."""
    H, K, V = 2, 16, 32
    T = sum(lengths)
    q, k, v, _, _, _ = gdn_inputs(1, T, H, K, V, seed=23)
    h0 = torch.randn(len(lengths), H, K, V, generator=torch.Generator().manual_seed(24))
    inputs = [q, k, v, per_channel_gate(1, T, H, K, seed=25), torch.zeros(1, T, H), h0]
    cu = torch.tensor([0, lengths[0], T])
    fn, reference = PATHS["gla" if C == 16 else "gla64"]
    got = run(fn, inputs, torch.float32, cu)
    oracle = run(reference, inputs, torch.float64, cu)
    assert_within_bound(got, oracle, depth(max(lengths), K, V, C))


@pytest.mark.parametrize("path,C,lengths", [("chunked", 16, (17, 23)),
                                           pytest.param("chunked", 64, (70, 45), marks=SLOW),
                                           pytest.param("token_by_token", 16, (17, 23), marks=SLOW)])
def test_kda_matches_float64_oracle(path, C, lengths, monkeypatch):
    """KDA: per-channel gate with the delta rule, packed (17 + 23 tokens at C = 16; 70 + 45
    at C = 64: neither a multiple of 64, the second sequence one partial chunk; two initial
    states), forward and every gradient. The error model above holds unchanged: with k
    normalised, beta in (0, 1) and every per-channel decay in (0, 1], the step map
    S -> (I - beta k k^T) diag(a) S is a product of two maps of 2-norm <= 1, so it and its
    adjoint are non-expansive and rounding errors add over the steps. Per chunk of C = 16 the
    chunked form makes the same chains of roundings as GDN's at C = 16: L_rs is a length-K
    contraction of pair-decayed products (one fp32 exp and two products more per term than
    k_r.k_s exp(gc_r - gc_s): inside the 4C allowance), A by forward substitution (depth C),
    W, Utld, U and the scans as for GDN, the output and grad_qk as for GLA (P a length-K sum,
    P U length C); the backward adds the WY VJP's contractions (dA over V and K, dL = -A^T dA
    A^T: 2C) and the per-channel dg sums: a reverse cumsum (C) and a rectangle sum of at most
    C^2 / 4 = 4C terms at C = 16. So N = depth(T, K, V, 16) as for GDN and GLA. At C = 64
    (sub-chunks of 16) L and its VJP are GLA's score blocks with q = beta k, so their chains
    are those derived for GLA at 64 above, and the inverse by row blocks
    A_i,: = A_ii (E_i - L_i,<i A_<i,<i) chains at most one 16-step substitution and a
    length-C product per block row (C / 16 of them): depth(T, K, V, 64). The
    token-by-token path (forced here on finite inputs; taken for non-finite results) makes the
    reference's own operations: N_rec = 8 T + K V, derived in the module docstring."""
    H, K, V = 2, 16, 32
    T = sum(lengths)
    q, k, v, _, beta, _ = gdn_inputs(1, T, H, K, V, seed=29)
    h0 = torch.randn(len(lengths), H, K, V, generator=torch.Generator().manual_seed(30))
    inputs = [q, k, v, per_channel_gate(1, T, H, K, seed=31), beta, h0]
    cu = torch.tensor([0, lengths[0], T])
    fn, reference = PATHS["kda" if C == 16 else "kda64"]
    N = depth(max(lengths), K, V, C)
    if path == "token_by_token":
        monkeypatch.setattr(gdn_chunk, "fallback_flag", always_fall_back)
        N = depth_recurrent(max(lengths), K, V)
    got = run(fn, inputs, torch.float32, cu)
    oracle = run(reference, inputs, torch.float64, cu)
    assert_within_bound(got, oracle, N)


def nonfinite_classes(t):
    """0 finite, 1 NaN, 2 +Inf, 3 -Inf per element (as kdiff's EXC-01 classifies)."""
    return (torch.isnan(t).int() + 2 * (t == math.inf).int() + 3 * (t == -math.inf).int())


def gla_fn(fn):
    """Simple GLA through run()'s GDN signature: beta is ignored (its gradient is None)."""
    return lambda q, k, v, g, beta, **kw: fn(q, k, v, g, **kw)


PATHS = {
    "gdn": (lambda *a, **kw: triton_gdn(*a, chunk_size=16, **kw), gated_delta_rule_reference),
    "simple_gla": (gla_fn(lambda *a, **kw: chunk_simple_gla(*a, output_final_state=True,
                                                            chunk_size=16, **kw)),
                   gla_fn(lambda *a, **kw: gated_recurrence(*a, None, **kw))),
    "gla": (gla_fn(lambda *a, **kw: chunk_gla(*a, output_final_state=True, chunk_size=16,
                                              **kw)),
            gla_fn(lambda *a, **kw: gated_recurrence(*a, None, **kw))),
    "gla64": (gla_fn(lambda *a, **kw: chunk_gla(*a, output_final_state=True, chunk_size=64,
                                                **kw)),
              gla_fn(lambda *a, **kw: gated_recurrence(*a, None, **kw))),
    "kda": (lambda *a, **kw: chunk_kda(*a, output_final_state=True, chunk_size=16, **kw),
            gated_recurrence),
    "kda64": (lambda *a, **kw: chunk_kda(*a, output_final_state=True, chunk_size=64, **kw),
              gated_recurrence),
}
PER_CHANNEL = ("gla", "gla64", "kda", "kda64")
DELTA = ("gdn", "kda", "kda64")


def per_channel_gate(B, T, H, K, seed):
    """GLA's gate [B, T, H, K]: decays in (0, 1), one per key channel."""
    gen = torch.Generator().manual_seed(seed)
    return F.logsigmoid(torch.randn(B, T, H, K, generator=gen) + 2.0)


@pytest.mark.parametrize("path,which,value", [("gdn", 2, math.nan),
                                              pytest.param("gdn", 0, math.inf, marks=SLOW),
                                              pytest.param("simple_gla", 1, math.nan,
                                                           marks=SLOW),
                                              ("gla", 2, math.nan),
                                              pytest.param("gla64", 0, math.nan, marks=SLOW),
                                              pytest.param("kda", 1, math.nan, marks=SLOW),
                                              pytest.param("kda64", 1, math.nan, marks=SLOW)])
def test_nonfinite_at_token_t_is_causal(path, which, value):
    """A NaN or Inf in one token's q, k or v (token t = 21, inside the second chunk of 16, or
    the second sub-chunk of one chunk of 64):
    outputs before t are finite and equal the clean run's, and every output and gradient has
    the float64 oracle's NaN/Inf mask. The chunked products alone put NaN on tokens 16..20
    (0 * NaN in the masked triangle). V = 48 spans two value blocks of the token-by-token
    path (sums over blocks, padded columns)."""
    fn, reference = PATHS[path]
    B, T, H, K, V, t = 1, 24, 1, 16, 48, 21
    clean = gdn_inputs(B, T, H, K, V, seed=13)
    if path in PER_CHANNEL:
        clean[3] = per_channel_gate(B, T, H, K, seed=14)
    inputs = [x.clone() for x in clean]
    inputs[which][0, t, 0, 3] = value
    got = run(fn, inputs, torch.float32)
    oracle = run(reference, inputs, torch.float64)
    for name, a, b in zip(NAMES, got, oracle):
        if b is not None:
            assert torch.equal(nonfinite_classes(a), nonfinite_classes(b)), name
    assert torch.isfinite(got[0][:, :t]).all()
    # the tokens before t, bitwise: the token-by-token path on the clean inputs
    xs = [x.contiguous() for x in clean]
    layout = chunk_layout(B, T, 16, xs[0].device)
    o_clean = torch.empty_like(xs[2])
    gdn_recurrent.recurrent_forward(*xs[:4], xs[4] if path in DELTA else None, K ** -0.5, xs[5],
                                    layout, o=o_clean)
    assert torch.equal(got[0][:, :t], o_clean[:, :t])
    judged = [None if b is None else torch.isfinite(b) for b in oracle]
    assert_within_bound(got, oracle, depth_recurrent(T, K, V), judged)


@pytest.mark.parametrize("path", ["gdn", pytest.param("kda", marks=SLOW),
                                  pytest.param("kda64", marks=SLOW)])
def test_zero_decay_is_finite(path):
    """g = -inf (logsigmoid(-inf): a decay of exactly 0) resets the state, as the
    recurrence does; in the chunked form exp(gc_r - gc_s) is exp(-inf + inf) = NaN on the
    tokens after it. Everything is finite and within the token-by-token bound; K = 12 and
    V = 20 leave padded rows and columns in the tiles. KDA: the zero decay in some channels
    only (the others carry on)."""
    B, T, H, K, V = 1, 24, 1, 12, 20
    inputs = gdn_inputs(B, T, H, K, V, seed=17)
    if path in PER_CHANNEL:
        inputs[3] = per_channel_gate(B, T, H, K, seed=18)
        inputs[3][0, 5, 0, [1, 7]] = -math.inf
        inputs[3][0, 18, 0, 4] = -math.inf
    else:
        inputs[3][0, [5, 18], 0] = -math.inf
    fn, reference = PATHS[path]
    got = run(fn, inputs, torch.float32)
    oracle = run(reference, inputs, torch.float64)
    for name, a in zip(NAMES, got):
        assert torch.isfinite(a).all(), name
    assert_within_bound(got, oracle, depth_recurrent(T, K, V))


class _GdnModule(torch.nn.Module):
    def forward(self, q, k, v, g, beta, h0):
        return gated_delta_rule_reference(q, k, v, g, beta, initial_state=h0)


@SLOW
def test_overflow_range_finite_where_reference_is():
    """kdiff PRC-03's range case: every pre-activation input uniform(-1, 1) x 2^64, through
    the problem's activations (k normalised, g = logsigmoid: decays of exactly 1 or 0,
    beta = sigmoid: 0 or 1). o and the gradients reach ~10^38. Judged, as PRC-03 judges:
    where the fp32 sequential reference and the oracle are finite and the oracle's traced
    magnitude (the sum of |terms|) is below the fp32 maximum, so that no summation order
    overflows. There the result must be finite and within the bound. The chunked backward
    alone overflows inside a chunk and then meets a zero decay (inf * 0): NaN in dk and dg
    where the oracle has 0."""
    B, T, H, K, V = 1, 24, 2, 16, 16
    gen = torch.Generator().manual_seed(3)
    q, k, v, g, beta, h0 = [(torch.rand(shape, generator=gen) * 2 - 1) * 2.0 ** 64 for shape in
                            [(B, T, H, K), (B, T, H, K), (B, T, H, V), (B, T, H), (B, T, H),
                             (B, H, K, V)]]
    inputs = [q, F.normalize(k, dim=-1), v, F.logsigmoid(g), torch.sigmoid(beta), h0]
    got = run(lambda *a, **kw: triton_gdn(*a, chunk_size=16, **kw), inputs, torch.float32)
    reference = run(gated_delta_rule_reference, inputs, torch.float32)
    cot = [c.double() for c in cotangents(got[0].shape, got[1].shape, 0)]
    traced = run_oracle(_GdnModule(), [x.float() for x in inputs], cot)
    fmax = torch.finfo(torch.float32).max
    judged = [torch.isfinite(b) & torch.isfinite(r) & (m < fmax)
              for b, r, m in zip(traced.values, reference, traced.magnitudes)]
    assert (judged[5] & (traced.values[5] == 0)).any()  # the zero-decay gates are judged
    for name, a, j in zip(NAMES, got, judged):
        assert torch.isfinite(a[j]).all(), name
    assert_within_bound(got, traced.values, depth_recurrent(T, K, V), judged)


@SLOW
def test_nonfinite_in_one_packed_sequence_stays_there(monkeypatch):
    """Packed sequences (cu_seqlens) through the token-by-token path: a NaN in the second
    sequence's v leaves the first sequence's outputs and gradients finite and bitwise those of
    the clean call on the same path; every mask equals the oracle's."""
    lengths, H, K, V = (19, 21), 1, 16, 16
    T = sum(lengths)
    clean = gdn_inputs(1, T, H, K, V, seed=19)
    clean[5] = torch.randn(len(lengths), H, K, V, generator=torch.Generator().manual_seed(20))
    cu = torch.tensor([0, lengths[0], T])
    inputs = [x.clone() for x in clean]
    inputs[2][0, 30, 0, 5] = math.nan
    fn = PATHS["gdn"][0]
    got = run(fn, inputs, torch.float32, cu)
    oracle = run(gated_delta_rule_reference, inputs, torch.float64, cu)
    for name, a, b in zip(NAMES, got, oracle):
        assert torch.equal(nonfinite_classes(a), nonfinite_classes(b)), name
    with monkeypatch.context() as m:  # the clean call, forced onto the token-by-token path
        m.setattr(gdn_chunk, "fallback_flag", always_fall_back)
        forced = run(fn, clean, torch.float32, cu)
    first = lengths[0]
    for name, a, b in zip(NAMES, got, forced):
        part_a, part_b = (a[:1], b[:1]) if name in ("final_state", "dh0") else (a[:, :first],
                                                                               b[:, :first])
        assert torch.isfinite(part_a).all() and torch.equal(part_a, part_b), name


def test_gated_token_by_token_passes_write_only_when_flagged():
    """Both fallbacks are decided on the device: the token-by-token kernels run after every
    chunked forward and backward and must leave their outputs (o and the final state; the six
    gradients) untouched where the flag is 0 (a sentinel survives bitwise), and write what an
    ungated launch writes where it is 1. V = 48: two value blocks, the second padded."""
    B, T, H, K, V = 1, 20, 2, 16, 48
    q, k, v, g, beta, h0 = gdn_inputs(B, T, H, K, V, seed=41)
    do, dht = cotangents(v.shape, h0.shape, 41)
    layout = chunk_layout(B, T, 16, q.device)

    def forward(when):
        o = torch.full_like(v, 7.0)
        ht = torch.full((1, H, K, V), 7.0)
        gdn_recurrent.recurrent_forward(q, k, v, g, beta, K ** -0.5, h0, layout, o=o, ht=ht,
                                        when=when)
        return o, ht

    def backward(when):
        grads = tuple(torch.full_like(x, 7.0) for x in (q, k, v, g, beta, h0))
        gdn_recurrent.recurrent_backward(q, k, v, g, beta, K ** -0.5, h0, do, dht, layout,
                                         grads, when=when)
        return grads

    for run_pass in (forward, backward):
        for out in run_pass(torch.zeros(1, dtype=torch.int32)):
            assert torch.equal(out, torch.full_like(out, 7.0))
        ungated = run_pass(None)
        assert all(torch.isfinite(x).all() and not torch.equal(x, torch.full_like(x, 7.0))
                   for x in ungated)
        for got, want in zip(run_pass(torch.ones(1, dtype=torch.int32)), ungated):
            assert torch.equal(got, want)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_fallback_flag_sees_every_nonfinite_value(device, dtype):
    """The chunked path's fallback trigger (a reduction per tensor, kept on the device) on
    every kind of non-finite value at the first, a middle and the last element, on a strided
    view, with None and empty tensors skipped, and in every program of a tensor that takes
    several (the last one partly masked)."""
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    clean = torch.randn(3, 70, 5, dtype=dtype, device=device)
    empty = torch.empty(0, dtype=dtype, device=device)

    def flag(*tensors):
        out = gdn_chunk.fallback_flag(*tensors)
        assert out.shape == (1,) and out.dtype == torch.int32 and out.device == clean.device
        return out.item()

    assert flag(clean, None, empty, clean[:, ::3]) == 0
    assert flag(None, empty) == 0
    for value in (math.nan, math.inf, -math.inf):
        for index in ((0, 0, 0), (1, 33, 2), (2, 69, 4)):
            bad = clean.clone()
            bad[index] = value
            assert flag(clean, bad) == 1, (value, index)
            assert flag(bad[:, index[1]:index[1] + 1]) == 1, (value, index)
    many = torch.zeros(2 * FLAG_BLOCK + 3, dtype=dtype, device=device)
    assert flag(many) == 0
    for index in (FLAG_BLOCK - 1, FLAG_BLOCK, many.numel() - 1):
        bad = many.clone()
        bad[index] = math.nan
        assert flag(many, bad) == 1, index


@pytest.mark.parametrize("path", ["gdn", "simple_gla"])
def test_nonfinite_cotangent_takes_the_backward_fallback(path):
    """A NaN in the output's cotangent at one token: the forward is finite, so only the
    backward's check (the flags its kernels write) can send the call to the token-by-token
    gradients; every gradient then has the float64 oracle's NaN mask (the chunked
    backward alone puts it on the later tokens of its chunk too: 0 * NaN in the masked
    triangle). No initial state, so no dh0 that the NaN would reach as well."""
    fn, reference = PATHS[path]
    B, T, H, K, V, t = 1, 40, 1, 16, 32, 21
    inputs = gdn_inputs(B, T, H, K, V, seed=17)[:5]
    grads = []
    for f, dtype in ((fn, torch.float32), (reference, torch.float64)):
        xs = [x.to(dtype).clone().requires_grad_() for x in inputs]
        o, ht = f(*xs)
        do, dht = cotangents(o.shape, ht.shape, 0)
        do[0, t, 0, 7] = math.nan
        torch.autograd.backward([o, ht], [do.to(dtype), dht.to(dtype)])
        grads.append([x.grad for x in xs])
    for name, a, b in zip(NAMES[2:], *grads):
        if b is not None:
            assert torch.equal(nonfinite_classes(a), nonfinite_classes(b)), name


def test_state_scans_take_their_own_settings_where_programs_are_few(monkeypatch):
    """The state scans' settings: BLOCK_V's, and FEW_PROGRAMS_SCAN's where sequences x heads x
    BLOCK_V-column blocks leave an H200's 132 multiprocessors idle (the issue's shapes,
    V = 128); never on the CPU."""
    monkeypatch.setattr(gdn_chunk, "multiprocessors", lambda device: 132)
    monkeypatch.setitem(gdn_chunk.FEW_PROGRAMS_SCAN, "state_fwd",
                        {"bv": 16, "warps": 2, "stages": 3})
    cuda = torch.device("cuda")
    few = {nh: gdn_chunk.few_programs("state_fwd", nh, 128, cuda) for nh in (32, 64, 96, 256)}
    assert few == {32: True, 64: True, 96: False, 256: False}
    assert [gdn_chunk.scan_bv("state_fwd", f, 128) for f in (True, False)] == [16, 64]
    assert gdn_chunk.launch("state_fwd", torch.bfloat16, few=True) == {"num_warps": 2,
                                                                     "num_stages": 3}
    assert gdn_chunk.backward_scan_few(32, 128, cuda)
    # P^T dO inside the scan: never (that build read out of its shared memory on the H200)
    monkeypatch.setattr(gdn_chunk, "SPLIT_LOCAL_DU", False)
    assert not gdn_chunk.backward_scan_few(32, 128, cuda)
    monkeypatch.undo()
    assert not gdn_chunk.few_programs("state_bwd", 1, 128, torch.device("cpu"))


@SLOW
def test_value_blocks_leave_every_result_bitwise_unchanged(monkeypatch):
    """The launch settings' V-blocks only partition V: every value column is computed by the
    same products whichever block it falls in. W/Utld and the output at all 128 columns at once
    (the H200 settings) against 64 and 32, and the state scans at 16 (FEW_PROGRAMS_SCAN's)
    against 64: all eight results bitwise equal. A block that mis-indexed its columns, or
    dropped a partial block, would not be."""
    inputs = gdn_inputs(1, 20, 1, 16, 128, seed=13)
    fallbacks = record_fallbacks(monkeypatch)
    results = []
    for apply_bv, scan_bv in ((128, 16), (64, 64), (32, 32)):
        for kernel in ("wy_apply", "output_fwd"):
            monkeypatch.setitem(gdn_chunk.BLOCK_V, kernel, apply_bv)
        for kernel in ("state_fwd", "state_bwd"):
            monkeypatch.setitem(gdn_chunk.BLOCK_V, kernel, scan_bv)
        results.append(run(lambda *a, **kw: triton_gdn(*a, chunk_size=16, **kw), inputs,
                           torch.float32))
    assert fallbacks == [0] * 6  # three forwards and backwards, all answered by the chunks
    for other in results[1:]:
        for name, a, b in zip(NAMES, results[0], other):
            assert torch.equal(a, b), name


@pytest.mark.parametrize("bk", [pytest.param(16, marks=SLOW), 32])
def test_key_slices_match_float64_oracle(bk, monkeypatch):
    """The WY inverse, W/Utld and the output loop over K in BLOCK_K-wide slices: at K = 48,
    slices of 16 (three full) and of 32 (one full, one half masked) against the float64
    oracle. A loop that dropped or mis-masked its last slice would lose a third of K."""
    T, C, K, V = 40, 16, 48, 32
    inputs = gdn_inputs(1, T, 2, K, V, seed=29)
    for kernel in gdn_chunk.BLOCK_K:
        monkeypatch.setitem(gdn_chunk.BLOCK_K, kernel, bk)
    fallbacks = record_fallbacks(monkeypatch)
    got = run(lambda *a, **kw: triton_gdn(*a, chunk_size=C, **kw), inputs, torch.float32)
    assert fallbacks == [0, 0]  # the forward's and the backward's: the chunked path answered
    oracle = run(gated_delta_rule_reference, inputs, torch.float64)
    assert_within_bound(got, oracle, depth(T, K, V, C))


def test_head_dimension_past_the_limit_is_refused_by_kernel_and_problem():
    """K > 256 is outside what the chunked kernels hold (host.MAX_HEAD_DIM_K, as fla's): the
    kernel says so in one line, and the problems' references refuse it too, so kdiff's CMP-03
    treats such sizes as outside the problem's shape class."""
    from kdiff.kernels.gdn.problems import within_shape_class
    q, k, v, g, beta, h0 = gdn_inputs(1, 4, 1, 257, 16, seed=5)
    with pytest.raises(ValueError, match="key head dimension 257 > 256"):
        chunk_gated_delta_rule(q, k, v, g, beta, initial_state=h0)
    with pytest.raises(ValueError, match="key head dimension 257 > 256"):
        within_shape_class(k)
    within_shape_class(k[..., :256])


def test_fp32_launches_take_eight_warps_but_the_inverse():
    """fp32 (the gates' dtype) compiles whole fp32 tiles per thread: at least 8 warps, one
    pipeline stage; the WY inverse keeps its one warp; bf16 keeps the sweep's settings."""
    for kernel in ("output_fwd", "wy_bwd", "state_bwd", "state_fwd"):
        assert gdn_chunk.launch(kernel, torch.float32) == {"num_warps": 8, "num_stages": 1}
    assert gdn_chunk.launch("state_fwd", torch.float32, few=True)["num_warps"] == 8
    assert gdn_chunk.launch("wy_inverse", torch.float32)["num_warps"] == 1
    assert gdn_chunk.launch("output_fwd", torch.bfloat16)["num_warps"] == gdn_chunk.WARPS[
        "output_fwd"]


def test_odd_head_dimensions_take_the_generic_build():
    """K and V multiples of 16 launch the aligned build, any other the generic one (jit.py)."""
    kernel = gdn_wy.wy_apply_kernel
    names = list(inspect.signature(kernel.aligned.fn).parameters)
    args = [None] * names.index("H") + [2, 16, 32]  # ..., H, K, V
    assert kernel.build_for(tuple(args), {}) is kernel.aligned
    for K, V in ((17, 32), (16, 1), (1, 16), (127, 100)):
        args[-2:] = K, V
        assert kernel.build_for(tuple(args), {}) is kernel.generic, (K, V)


# This module runs the kernels through the interpreter (TRITON_INTERPRET is read when a kernel
# is decorated); compiled builds are counted in a fresh interpreter without it.
COUNT_BUILDS = """
import json, sys
import torch, torch.nn.functional as F
from kdiff.kernels.gdn import chunk_gated_delta_rule, wy
for H, K in ((1, 17), (3, 19), (16, 23)):
    gen = torch.Generator().manual_seed(K)
    q = torch.randn(1, 40, H, K, generator=gen).cuda()
    k = F.normalize(torch.randn(1, 40, H, K, generator=gen), dim=-1).cuda()
    v = torch.randn(1, 40, H, 16, generator=gen).cuda()
    g = F.logsigmoid(torch.randn(1, 40, H, generator=gen) + 2.0).cuda()
    beta = torch.rand(1, 40, H, generator=gen).cuda()
    chunk_gated_delta_rule(q, k, v, g, beta, output_final_state=True, chunk_size=64)
torch.cuda.synchronize()
kernel = wy.wy_apply_kernel
print(json.dumps({name: sum(len(cache) for cache, *_ in build.device_caches.values())
                  for name, build in (("generic", kernel.generic), ("aligned", kernel.aligned))}))
"""


@pytest.mark.gpu
def test_odd_sizes_share_one_compiled_build():
    """The held-out sizes of CMP-03 (1, primes, non-multiples of 16) compile the generic build
    once per tile shape: K in {17, 19, 23} (BK 32) and H in {1, 3, 16} reuse one compile,
    and the aligned build is never compiled."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", COUNT_BUILDS], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    builds = json.loads(done.stdout.strip().splitlines()[-1])
    assert builds == {"generic": 1, "aligned": 0}, builds


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_packed_oracle_equals_separate_sequences_with_nonfinite_input(value):
    """The oracle steps packed sequences together (reference.py); a sequence that has ended
    must take no part in later steps, or 0 x Inf in the graph turns its Inf gradients into
    NaN (kdiff's EXC-01 on the varlen problem caught that). Values, non-finite classes and
    gradients equal those of each sequence run alone, an Inf or NaN in the last token of the
    shorter sequence."""
    cu = [0, 7, 9]
    xs = [x.double() for x in gdn_inputs(1, 9, 2, 4, 3, seed=5)]
    xs[5] = torch.randn(2, 2, 4, 3, dtype=torch.float64)
    xs[1][0, 8, 0, 0] = value

    def outputs_and_grads(inputs, cu_seqlens):
        leaves = [x.clone().requires_grad_() for x in inputs]
        o, ht = gated_recurrence(*leaves[:5], None, leaves[5], cu_seqlens)
        grads = torch.autograd.grad([o, ht], leaves, [torch.ones_like(o), torch.ones_like(ht)])
        return o, ht, grads

    o, ht, grads = outputs_and_grads(xs, torch.tensor(cu))
    for n, (bos, eos) in enumerate(zip(cu[:-1], cu[1:])):
        alone = [x[:, bos:eos] for x in xs[:5]] + [xs[5][n:n + 1]]
        o_n, ht_n, grads_n = outputs_and_grads(alone, None)
        pairs = [(o[:, bos:eos], o_n), (ht[n:n + 1], ht_n), (grads[5][n:n + 1], grads_n[5])]
        pairs += [(g[:, bos:eos], g_n) for g, g_n in zip(grads[:5], grads_n[:5])]
        for packed, separate in pairs:
            torch.testing.assert_close(packed, separate, rtol=1e-12, atol=1e-12, equal_nan=True)
