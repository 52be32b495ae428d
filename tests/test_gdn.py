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
gamma_N <= 1.01 N u (kdiff.gates.tolerance, worst-case model).
"""
from __future__ import annotations

import math
import os

os.environ["TRITON_INTERPRET"] = "1"  # before kdiff.kernels.gdn decorates its kernels

import pytest
import torch
import torch.nn.functional as F

from kdiff.gates.tolerance import WORST_CASE_C, growth, unit_roundoff
from kdiff.kernels.gdn import chunk as gdn_chunk
from kdiff.kernels.gdn import (chunk_gated_delta_rule, chunk_simple_gla, gated_delta_rule_reference,
                               gated_recurrence)

NAMES = ("o", "final_state", "dq", "dk", "dv", "dg", "dbeta", "dh0")


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


def triton_gdn(*args, chunk_size, **kw):
    return chunk_gated_delta_rule(*args, output_final_state=True, chunk_size=chunk_size, **kw)


def depth(T, K, V, C):
    return (math.ceil(T / C) + 1) * (K + V + 4 * C)


def assert_within_bound(got, oracle, N):
    bound = WORST_CASE_C * growth(N, "worst") * unit_roundoff(torch.float32)
    for name, a, b in zip(NAMES, got, oracle):
        err = (a.double() - b).abs().max().item()
        scale = b.abs().max().item()
        assert err <= bound * scale, (f"{name}: max error {err:.3e} > bound {bound * scale:.3e} "
                                      f"(N={N}, relative {err / scale:.3e} vs {bound:.3e})")


@pytest.mark.parametrize("T,C", [(40, 16), (70, 64)])
def test_forward_and_gradients_match_float64_oracle(T, C):
    B, H, K, V = 2, 2, 16, 32
    inputs = gdn_inputs(B, T, H, K, V, seed=T)
    got = run(lambda *a, **kw: triton_gdn(*a, chunk_size=C, **kw), inputs, torch.float32)
    oracle = run(gated_delta_rule_reference, inputs, torch.float64)
    assert_within_bound(got, oracle, depth(T, K, V, C))


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
    bound = WORST_CASE_C * growth(depth(24, 16, 16, 16), "worst") * unit_roundoff(torch.float32)
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
    bound = WORST_CASE_C * growth(depth(T, K, V, C), "worst") * unit_roundoff(torch.float32)
    for name, a, b in zip(("o", "final_state", "dq", "dk", "dv", "dg", "dh0"), got, oracle):
        assert (a.double() - b).abs().max() <= bound * b.abs().max(), name
