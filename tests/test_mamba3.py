"""Mamba-3 SISO (kdiff.kernels.mamba3): the chunked PyTorch form against the sequential
float64 oracle, and the Triton forward and decode step against it through the interpreter in
fp32 on tiny shapes.

Error model (a first-order worst-case bound, normwise per tensor; derived here, not fitted).
Every map the state goes through is non-expansive: S -> alpha S with alpha = exp(adt) in
(0, 1] (adt = -softplus(a) dt <= 0), plus rank-one terms; the phase is fp64 (its rounding,
near 2^-52 of 2 pi, is far below fp32's). So rounding errors made at one step are not
amplified by later ones and add up. Along a sequence of T tokens in chunks of C, one chunk
computes: the rotations (2 products and a sum), q'.k' and Q'S^T (length-K contractions), the
decay and weight products of P (3), P V (length C), the state step (length C, then one sum),
D v and silu(z) (3): fewer than K + V + 4 C roundings on any path, per chunk, plus the state
carried in (one more chunk's worth). Hence

    max|err| <= gamma_N * max|oracle|,  N = (ceil(T / C) + 1) * (K + V + 4 C)

with gamma_N = N u / (1 - N u) (kdiff.numerics.tolerance.gamma, the worst-case model). The same N covers the
chunked PyTorch form in float64 (u = 2^-53). The token-by-token kernel (the decode step, and
the forward's fallback) forms the reference's operations per token: at most 8 roundings per
token along the state (alpha S, the two weights, the two outer products' scalings, the two
sums, and the rotations), then one length-K reduction and 3 for D v and silu(z):
N_rec = 8 T + K + 3.

The token-by-token backward (the fallback of the chunked one) recomputes that forward (N_rec)
and walks its adjoint: per token dS_{t-1} = (dS_t + dy q'^T) alpha (3 roundings) and the
phase gradient's carry dtheta + dtheta_q + dtheta_k (2), so 5 T along the sequence; then at
most 16 for any one gradient from those: its contraction (the fp32 product, and the fp64 sum
rounded once: 2), the gate's and D's step (4), the chain of scalar factors of the gates
(d prev alpha dt (1 - lam) lam: 5) and the rotation back or the phase's dt pi (1 - tanh^2)
(5). N_bwd = N_rec + 5 T + 16.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys

os.environ["TRITON_INTERPRET"] = "1"  # before kdiff.kernels.mamba3 decorates its kernels

import pytest
import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from mamba3_reductions import reduction_inputs, reductions, same_bits  # beside this file

from kdiff.kernels.mamba3 import backward as m3_backward
from kdiff.kernels.mamba3 import forward as m3_forward
from kdiff.kernels.mamba3 import mamba3_siso_chunked, mamba3_siso_recurrence
from kdiff.kernels.mamba3.backward import mamba3_siso
from kdiff.kernels.mamba3.forward import mamba3_siso_forward, mamba3_siso_step
from kdiff.kernels.mamba3.ops import cos_sin
from kdiff.kernels.mamba3.problems import activations, sequence_inputs
from kdiff.kernels.mamba3.reference import (
    ROTATION_BLOCKS,
    TWO_PI,
    States,
    expand_heads,
    rotate,
)
from kdiff.numerics.oracle import MagnitudeTracer, run_oracle
from kdiff.numerics.tolerance import (
    difference,
    gamma,
    unit_roundoff,
)

NAMES = ("out", "angle_state", "ssm_state", "k_state", "v_state")
SLOW = pytest.mark.slow  # over 20 s in the interpreter on this machine


def recurrence_args(B, T, Hqk, G, K, V, seed):
    """The problems' draw, activated: [q, k, v, adt, dt, trap, q_bias, k_bias, angles, D, z]
    and the initial States."""
    torch.manual_seed(seed)
    q, k, v, a, dt, trap, qb, kb, angles, D, z, *states = sequence_inputs(B, T, Hqk, G, K, V)
    q, k, adt, dt = activations(q, k, a, dt)
    return [q, k, v, adt, dt, trap, qb, kb, angles, D, z], States(*states)


def depth(T, K, V, C):
    return (math.ceil(T / C) + 1) * (K + V + 4 * C)


def depth_recurrent(T, K):
    return 8 * T + K + 3


def depth_recurrent_backward(T, K):
    return depth_recurrent(T, K) + 5 * T + 16


def assert_within_bound(got, oracle, N, dtype=torch.float32):
    bound = gamma(N, unit_roundoff(dtype))
    for name, a, b in zip(NAMES, got, oracle):
        # the angle state is an angle (problems.py declares it periodic)
        period = TWO_PI if name == "angle_state" else None
        err = difference(a.double(), b.double(), period).max().item()
        scale = b.abs().max().item()
        assert err <= bound * scale, (f"{name}: max error {err:.3e} > bound {bound * scale:.3e} "
                                      f"(N={N}, relative {err / scale:.3e} vs {bound:.3e})")


def oracle(args, states):
    return mamba3_siso_recurrence(*[a.double() for a in args],
                                  States(*(s.double() for s in states)))


def flat(result):
    out, states = result
    return [out, *states]


def record_fallbacks(monkeypatch) -> list:
    """Every fallback decision of the chunked forward calls that follow, as ints: a chunked
    result gone non-finite is otherwise recomputed token by token, and passes."""
    decisions = []
    real = m3_forward.fallback_flag

    def recording(*tensors):
        flag = real(*tensors)
        decisions.append(int(flag.item()))
        return flag
    monkeypatch.setattr(m3_forward, "fallback_flag", recording)
    return decisions


def test_chunked_form_and_its_gradients_equal_the_oracle():
    """float64 on both sides: the chunked algorithm (the Triton forward's) is the recurrence,
    forward and through autograd (the basis of a chunked backward)."""
    B, T, Hqk, G, K, V, C = 2, 37, 2, 2, 16, 8, 16
    args, states = recurrence_args(B, T, Hqk, G, K, V, seed=1)
    leaves = [x.double().requires_grad_() for x in [*args, *states]]
    got = flat(mamba3_siso_chunked(*leaves[:11], States(*leaves[11:]), chunk_size=C))
    want = flat(mamba3_siso_recurrence(*leaves[:11], States(*leaves[11:])))
    assert_within_bound(got, [w.detach() for w in want], depth(T, K, V, C), torch.float64)
    torch.manual_seed(2)
    cotangents = [torch.randn_like(w) for w in want]
    grads_got = torch.autograd.grad(got, leaves, cotangents)
    grads_want = torch.autograd.grad(want, leaves, cotangents)
    bound = gamma(depth(T, K, V, C), unit_roundoff(torch.float64))
    for i, (a, b) in enumerate(zip(grads_got, grads_want)):
        assert (a - b).abs().max() <= bound * b.abs().max(), f"gradient of input {i}"


def token_by_token(q, k, v, adt, dt, trap, q_bias, k_bias, angles, D, z, states):
    """The recurrence as its equations read (reference.py's docstring), every operation
    inside the loop over tokens."""
    H = v.shape[2]
    q, k = expand_heads(q, H), expand_heads(k, H)
    theta, S, k_prev, v_prev = states
    outs = []
    for t in range(q.shape[1]):
        theta = torch.remainder(theta + math.pi * torch.tanh(angles[:, t]) * dt[:, :, t, None],
                                TWO_PI)
        qt, kt = rotate(q[:, t] + q_bias, theta), rotate(k[:, t] + k_bias, theta)
        alpha, lam = adt[:, :, t].exp()[..., None, None], torch.sigmoid(trap[:, :, t, None, None])
        step = dt[:, :, t, None, None]
        S = (alpha * S + (1 - lam) * step * alpha * (v_prev[..., :, None] * k_prev[..., None, :])
             + lam * step * (v[:, t, :, :, None] * kt[..., None, :]))
        y = torch.einsum("bhvk,bhk->bhv", S, qt) + D[:, None] * v[:, t]
        outs.append(y * F.silu(z[:, t]))
        k_prev, v_prev = kt, v[:, t]
    return torch.stack(outs, dim=1), States(theta, S, k_prev, v_prev)


@pytest.mark.parametrize("T", [5, 2 * ROTATION_BLOCKS + 3])
def test_the_reference_is_the_token_by_token_loop_in_fewer_traced_operations(T):
    """reference.py steps only the angle and the state and rotates blocks of tokens at once:
    in float64 its values are the loop's (torch's vectorised exp, tanh, cos and sin may round a
    longer tensor's elements an ulp apart: within the recurrence's float64 bound), and the
    oracle's bounds of it are the loop's (each output's depth no shallower, and deeper by at
    most theta's two roundings a token over a block's other tokens; its magnitudes within
    their own precision), from fewer traced operations."""
    args, states = recurrence_args(1, T, 1, 2, 8, 4, seed=T)
    inputs = [x.double() for x in [*args, *states]]
    span = -(-T // ROTATION_BLOCKS)

    class Recurrence(torch.nn.Module):
        def __init__(self, recurrence):
            super().__init__()
            self.recurrence = recurrence

        def forward(self, *x):
            return flat(self.recurrence(*x[:11], States(*x[11:])))

    blocked = Recurrence(lambda *x: mamba3_siso_recurrence(*x[:11], initial_states=x[11]))
    looped = Recurrence(token_by_token)
    assert_within_bound(blocked(*inputs), looped(*inputs), depth_recurrent(T, 8), torch.float64)
    operations = {}
    traced = MagnitudeTracer.__torch_dispatch__

    def counting(self, func, *a, **kw):
        operations[self] = operations.get(self, 0) + 1
        return traced(self, func, *a, **kw)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(MagnitudeTracer, "__torch_dispatch__", counting)
        got, want = run_oracle(blocked, inputs), run_oracle(looped, inputs)
    fewer, more = operations.values()
    assert fewer < more
    for depth_got, depth_want in zip(got.depths, want.depths):
        assert depth_want <= depth_got <= depth_want + 2 * (span - 1)
    # the magnitudes are central differences: float64's u^(2/3) is their precision at best
    # (rounding u / h against truncation h^2, balanced)
    for a, b in zip(got.magnitudes, want.magnitudes):
        torch.testing.assert_close(a, b, rtol=unit_roundoff(torch.float64) ** (2 / 3), atol=0)


def test_the_forward_narrows_its_v_block_until_the_grid_fills_the_gpu(monkeypatch):
    """chunk_fwd_kernel's V-block: 64 while sequences x heads x V-blocks reach the
    multiprocessors, then 32, then 16 (never narrower); the widest off CUDA."""
    monkeypatch.setattr(m3_forward, "multiprocessors", lambda device: 132)
    cuda = torch.device("cuda")
    picked = {bh: m3_forward.forward_block_v(bh, 64, cuda) for bh in (512, 132, 128, 66, 32, 8)}
    assert picked == {512: 64, 132: 64, 128: 32, 66: 32, 32: 16, 8: 16}
    assert m3_forward.forward_block_v(128, 24, cuda) == 16  # V itself narrower than 32
    monkeypatch.undo()
    assert m3_forward.forward_block_v(1, 64, torch.device("cpu")) == 64


def test_the_inference_forward_walks_once_where_that_fills_the_gpu(monkeypatch):
    """One walk where sequences x heads x V-blocks of 64 reach the multiprocessors; the
    states' walk and the chunks at once below that; one walk off CUDA."""
    monkeypatch.setattr(m3_forward, "multiprocessors", lambda device: 132)
    cuda = torch.device("cuda")
    picked = {(bh, V): m3_forward.walks_once(bh, V, cuda)
              for bh, V in ((512, 64), (132, 64), (128, 64), (66, 128), (66, 64), (32, 64))}
    assert picked == {(512, 64): True, (132, 64): True, (128, 64): False, (66, 128): True,
                      (66, 64): False, (32, 64): False}
    monkeypatch.undo()
    assert m3_forward.walks_once(1, 64, torch.device("cpu"))


@pytest.mark.parametrize("form", ["one walk", "two kernels", "training"])
@pytest.mark.parametrize("T,C", [(37, 16), (20, 64)])
def test_triton_forward_matches_the_oracle(T, C, form, monkeypatch):
    """The inference forward's two forms (one walk; the states' walk, then every chunk's
    output at once) and the training step's, each with V in two blocks of 16 of its 24
    rows."""
    monkeypatch.setattr(m3_forward, "CHUNK_BLOCK_V", 16)
    monkeypatch.setattr(m3_forward, "walks_once", lambda *_: form == "one walk")
    B, Hqk, G, K, V = 2, 1, 2, 16, 24
    args, states = recurrence_args(B, T, Hqk, G, K, V, seed=T)
    fallbacks = record_fallbacks(monkeypatch)
    got = mamba3_siso_forward(*args, states, chunk_size=C, block_v=16,
                              store=form == "training")
    assert fallbacks == [0]  # the chunked kernels' own result
    assert_within_bound(flat(got[:2]), flat(oracle(args, states)), depth(T, K, V, C))


def record_backward_fallbacks(monkeypatch, force: bool = False) -> list:
    """Every fallback decision of the chunked backward calls that follow, as ints; with
    `force`, every call takes the token-by-token backward."""
    decisions = []
    real = m3_backward.recurrent_backward

    def recording(*args, when, **kwargs):
        if force:
            when = torch.ones_like(when)
        decisions.append(int(when.item()))
        return real(*args, when=when, **kwargs)
    monkeypatch.setattr(m3_backward, "recurrent_backward", recording)
    return decisions


def forward_backward(fn, args, states, dtype):
    """The five outputs and the gradients of all fifteen inputs, under fixed cotangents
    (drawn in float64, so that both precisions get the same ones)."""
    leaves = [x.to(dtype).clone().requires_grad_() for x in [*args, *states]]
    outputs = flat(fn(*leaves[:11], States(*leaves[11:])))
    gen = torch.Generator().manual_seed(7)
    cotangents = [torch.randn(o.shape, generator=gen, dtype=torch.float64).to(dtype)
                  for o in outputs]
    return [o.detach() for o in outputs], torch.autograd.grad(outputs, leaves, cotangents)


@pytest.mark.parametrize("state_block_v,chunk_block_v", [(None, 128), (16, 128), (None, 16)])
def test_triton_backward_matches_the_oracle(monkeypatch, state_block_v, chunk_block_v):
    """Every gradient (q, k, v, adt, dt, trap, the biases, the angles, D, z and the four
    initial states) through the chunk kernels and gates_bwd_kernel. The backward walks the
    adjoint of the forward's maps (non-expansive too) with the same contractions plus the
    reverse sums over a chunk (C) and, for the phase, over the sequence (T): N grows by T.
    With state_bwd_kernel and the chunk kernels over all of V, and each over blocks of 16 of
    its 24 rows (the chunk kernels' sums over V then from one share a block, the training
    forward's outputs a program a block)."""
    monkeypatch.setattr("kdiff.kernels.mamba3.backward.STATE_BLOCK_V", state_block_v)
    monkeypatch.setattr("kdiff.kernels.mamba3.backward.CHUNK_BLOCK_V", chunk_block_v)
    monkeypatch.setattr(m3_forward, "CHUNK_BLOCK_V", chunk_block_v)
    B, T, Hqk, G, K, V, C = 2, 20, 1, 2, 16, 24, 16
    args, states = recurrence_args(B, T, Hqk, G, K, V, seed=3)
    fallbacks = record_backward_fallbacks(monkeypatch)
    _, got = forward_backward(lambda *a: mamba3_siso(*a, chunk_size=C), args, states,
                              torch.float32)
    assert fallbacks == [0]  # the chunked kernels' own gradients
    _, want = forward_backward(mamba3_siso_recurrence, args, states, torch.float64)
    bound = gamma(depth(T, K, V, C) + T, unit_roundoff(torch.float32))
    for i, (a, b) in enumerate(zip(got, want)):
        err = (a.double() - b).abs().max().item()
        assert err <= bound * b.abs().max().item(), f"gradient of input {i}: {err:.3e}"


@pytest.mark.slow
def test_every_kernel_compiles_for_the_gpus(monkeypatch):
    """The interpreter runs what a GPU's compiler refuses (a name bound before a loop and
    rebound in it to another type: Triton's loop-carried variables keep one type). Every
    kernel the forward, the backward and the decode step launch, as they launched it here,
    is compiled for sm_90 and sm_100 up to Triton's allocation (RES-02's compile)."""
    from triton.runtime import autotuner, interpreter, jit

    from kdiff.sandbox.launches import LaunchRecorder, compile_launches
    for cls in (interpreter.InterpretedFunction, jit.JITFunction, autotuner.Autotuner):
        monkeypatch.setattr(cls, "run", cls.run)  # put back after the test
    recorder = LaunchRecorder()
    recorder.install()
    args, states = recurrence_args(1, 20, 1, 2, 16, 16, seed=6)
    forward_backward(lambda *a: mamba3_siso(*a, chunk_size=16), args, states, torch.float32)
    for one_walk in (True, False):  # the inference forward's two forms turn q and k themselves
        monkeypatch.setattr(m3_forward, "walks_once", lambda *_, w=one_walk: w)
        mamba3_siso_forward(*args, states, chunk_size=16)
    q, k, v, adt, dt, trap, qb, kb, angles, D, z = args
    mamba3_siso_step(q[:, 0], k[:, 0], v[:, 0], adt[..., 0], dt[..., 0], trap[..., 0], qb, kb,
                     angles[:, 0], D, z[:, 0], states)
    launches = list(recorder.launches.values())
    names = {launch.qualname for launch in launches}
    assert {"chunk_fwd_kernel", "chunk_states_kernel", "chunk_out_kernel", "phase_fwd_kernel",
            "chunk_state_bwd_kernel", "chunk_intra_bwd_kernel", "recurrent_fwd_kernel",
            "recurrent_bwd_kernel"} <= names, names
    jobs = [(launch, target) for launch in launches for target in ("sm_90", "sm_100")]
    refused = [f"{launch.label()} {target}: {outcome['error']}" for (launch, target), outcome
               in zip(jobs, compile_launches(jobs)) if "resources" not in outcome]
    assert not refused, refused


def test_forward_is_bitwise_deterministic():
    args, states = recurrence_args(1, 20, 1, 2, 16, 16, seed=5)
    first = flat(mamba3_siso_forward(*args, states, chunk_size=16))
    second = flat(mamba3_siso_forward(*args, states, chunk_size=16))
    for name, a, b in zip(NAMES, first, second):
        assert torch.equal(a, b), name


def test_a_nan_input_takes_the_token_by_token_path_with_the_oracles_mask(monkeypatch):
    """A NaN in v at token 20 reaches rows 16..19 of its chunk through P's masked zeros
    (0 * NaN) in the chunked products; the fallback recomputes the call token by token, and
    the NaNs are the oracle's, element for element."""
    T, K, V = 24, 16, 16
    args, states = recurrence_args(1, T, 1, 2, K, V, seed=9)
    args[2][0, 20, 1, 3] = math.nan
    fallbacks = record_fallbacks(monkeypatch)
    got = flat(mamba3_siso_forward(*args, states, chunk_size=16))
    want = flat(oracle(args, states))
    assert fallbacks == [1]
    for name, a, b in zip(NAMES, got, want):
        assert torch.equal(a.isnan(), b.isnan()), name
        finite = b.isfinite()
        a, b = a[finite], b[finite]
        bound = gamma(depth_recurrent(T, K), unit_roundoff(torch.float32))
        assert (a.double() - b).abs().max() <= bound * b.abs().max(), name


def test_the_token_by_token_backward_matches_the_oracle(monkeypatch):
    """The backward's fallback forced on finite inputs: every gradient within N_bwd (module
    docstring) of the oracle's, over two chunks, grouped heads and a V-block wider than V."""
    B, T, Hqk, G, K, V, C = 2, 12, 1, 2, 8, 12, 8
    args, states = recurrence_args(B, T, Hqk, G, K, V, seed=13)
    fallbacks = record_backward_fallbacks(monkeypatch, force=True)
    _, got = forward_backward(lambda *a: mamba3_siso(*a, chunk_size=C), args, states,
                              torch.float32)
    assert fallbacks == [1]
    _, want = forward_backward(mamba3_siso_recurrence, args, states, torch.float64)
    bound = gamma(depth_recurrent_backward(T, K), unit_roundoff(torch.float32))
    for i, (a, b) in enumerate(zip(got, want)):
        err = (a.double() - b).abs().max().item()
        assert err <= bound * b.abs().max().item(), f"gradient of input {i}: {err:.3e}"


def nonfinite_class(t: torch.Tensor) -> torch.Tensor:
    """0 finite, 1 NaN, 2 +Inf, 3 -Inf, per element."""
    return t.isnan() * 1 + (t == math.inf) * 2 + (t == -math.inf) * 3


# (input index in [q, k, v, adt, dt, trap, q_bias, k_bias, angles, D, z, theta0, S0, k0, v0],
# element, value): each reaches the chunked gradients through products the recurrence never
# forms (0 * NaN, Inf - Inf), which took other classes there (NaN for finite or +-Inf)
INJECTIONS = [
    (2, (0, 9, 1, 3), math.nan),
    pytest.param(1, (0, 5, 0, 2), math.inf, marks=SLOW),
    pytest.param(10, (0, 3, 0, 1), -math.inf, marks=SLOW),
    pytest.param(12, (0, 1, 2, 3), -math.inf, marks=SLOW),
    pytest.param(4, (0, 0, 7), math.inf, marks=SLOW),
]


@pytest.mark.parametrize("index,element,value", INJECTIONS)
def test_a_non_finite_input_gives_the_oracles_gradient_masks(index, element, value,
                                                            monkeypatch):
    """The outputs' and all fifteen gradients' NaN/+Inf/-Inf classes equal the float64
    oracle's, element for element, where the oracle and the fp32 reference agree (kdiff
    EXC-01's rule: elsewhere the class depends on the precision)."""
    B, T, Hqk, G, K, V, C = 1, 12, 1, 2, 8, 8, 8
    args, states = recurrence_args(B, T, Hqk, G, K, V, seed=3)
    leaves = [*args, *states]
    leaves[index][element] = value
    args, states = leaves[:11], States(*leaves[11:])
    fallbacks = record_backward_fallbacks(monkeypatch)
    outs, grads = forward_backward(lambda *a: mamba3_siso(*a, chunk_size=C), args, states,
                                   torch.float32)
    assert fallbacks == [1]
    want_outs, want = forward_backward(mamba3_siso_recurrence, args, states, torch.float64)
    ref_outs, ref = forward_backward(mamba3_siso_recurrence, args, states, torch.float32)
    for i, (a, w, r) in enumerate(zip([*outs, *grads], [*want_outs, *want], [*ref_outs, *ref])):
        judged = nonfinite_class(w) == nonfinite_class(r)
        wrong = judged & (nonfinite_class(a) != nonfinite_class(w))
        assert not wrong.any(), (f"result {i} (5 outputs, then the gradients): "
                                 f"{int(wrong.sum())} elements, first at "
                                 f"{wrong.nonzero()[0].tolist()}")


def test_the_backwards_flags_mark_the_blocks_whose_gradients_are_not_finite(monkeypatch):
    """The fallback decides on flags the kernels set where they form dq, dk (a block of rows),
    dv and dz (a chunk), rather than reading those gradients again: with a NaN in the output's
    cotangent, each block's flag is NaN exactly where its part of the chunked gradients
    (before the fallback overwrites them) holds a NaN or an Inf, and the call falls back."""
    B, T, Hqk, G, K, V, C = 1, 20, 1, 2, 8, 8, 8
    args, states = recurrence_args(B, T, Hqk, G, K, V, seed=3)
    seen = {}

    def flags_of(*tensors):
        seen["flags"] = [t.clone() for t in tensors[:3]]
        return real_flag(*tensors)

    def grads_of(*a, when, **kw):
        seen["grads"] = [g.clone() for g in a[14][:4]]  # dq, dk, dv, dz per head
        seen["when"] = int(when.item())
        return real_backward(*a, when=when, **kw)

    real_flag, real_backward = m3_backward.fallback_flag, m3_backward.recurrent_backward
    monkeypatch.setattr(m3_backward, "fallback_flag", flags_of)
    monkeypatch.setattr(m3_backward, "recurrent_backward", grads_of)
    leaves = [x.clone().requires_grad_() for x in [*args, *states]]
    out, *final = flat(mamba3_siso(*leaves[:11], States(*leaves[11:]), chunk_size=C))
    dout = torch.randn_like(out)
    dout[0, 11, 1, 3] = math.nan
    torch.autograd.grad([out, *final], leaves, [dout, *(torch.ones_like(f) for f in final)],
                        allow_unused=True)
    assert seen["when"] == 1
    qk_flags, dv_flags, dz_flags = seen["flags"]
    dq, dk, dv, dz = seen["grads"]
    H = dv.shape[2]

    def blocks(x, rows):  # [B, T, H, :] -> whether each (b, h, block of rows) is non-finite
        bad = ~x.isfinite().all(-1)  # [B, T, H]
        n = math.ceil(T / rows)
        bad = torch.nn.functional.pad(bad, (0, 0, 0, n * rows - T))
        return bad.view(B, n, rows, H).any(2).permute(0, 2, 1).reshape(-1)

    rows = m3_backward.ROTATE_ROWS
    assert torch.equal(qk_flags.isnan(), blocks(dq, rows) | blocks(dk, rows))
    assert torch.equal(dv_flags.isnan(), blocks(dv, C)) and dv_flags.isnan().any()
    assert torch.equal(dz_flags.isnan(), blocks(dz, C)) and dz_flags.isnan().any()
    assert qk_flags.isnan().any() and not qk_flags.isnan().all()


def test_decode_steps_match_the_oracle():
    """Three decode steps, each handing its states to the next, against the recurrence over
    the three tokens."""
    T, K, V = 3, 16, 16
    args, states = recurrence_args(2, T, 1, 2, K, V, seed=4)
    q, k, v, adt, dt, trap, qb, kb, angles, D, z = args
    current, outs = states, []
    for t in range(T):
        out, current = mamba3_siso_step(q[:, t], k[:, t], v[:, t], adt[..., t], dt[..., t],
                                        trap[..., t], qb, kb, angles[:, t], D, z[:, t], current)
        outs.append(out)
    assert_within_bound([torch.stack(outs, dim=1), *current], flat(oracle(args, states)),
                        depth_recurrent(T, K))


def test_the_phase_at_the_ends_of_the_range():
    """The phase as the oracle's at both ends of fp32's range: tiny steps keep their sign
    (tanh(x) = x at |x| = 1e-19; 1 - exp(-2|x|) is 0 there) and a phase of 1e19 is reduced
    exactly (an fmod, not x - 2 pi floor(x / 2 pi)). One decode step and the chunked forward:
    the angle state must equal the oracle's to the fp32 rounding of a value in [0, 2 pi)."""
    args, states = recurrence_args(1, 1, 1, 2, 16, 16, seed=6)
    theta0 = torch.tensor([[1e-20, -1e-20, 1e19, -3e19], [2e-20, 7e18, -1e-21, 1e-20]])
    angles = torch.tensor([[-1e-19, 1e-19, 0.5, -1e-19], [-1e-19, 1e-19, 1e-19, -1e-19]])
    args[8] = angles.view(1, 1, 2, 4)
    states = States(theta0.view(1, 2, 4), *states[1:])
    want = oracle(args, states)[1].angle
    q, k, v, adt, dt, trap, qb, kb, angles, D, z = args
    _, step = mamba3_siso_step(q[:, 0], k[:, 0], v[:, 0], adt[..., 0], dt[..., 0], trap[..., 0],
                               qb, kb, angles[:, 0], D, z[:, 0], states)
    _, chunked = mamba3_siso_forward(*args, states, chunk_size=16)
    for got in (step.angle, chunked.angle):
        assert (got.double() - want).abs().max() <= unit_roundoff(torch.float32) * 2 * math.pi


def test_the_angle_state_lands_on_the_oracles_angle_across_the_turn():
    """From 0, a step of -1e-19 lands on 2 pi - 1e-19, which rounds to 2 pi: the oracle's phase
    wraps there and the step is lost, then 2 pi plus a step of 1e-19 reduces to 0. A running
    sum keeps the steps and lands near 2e-19 instead, or on the other side of the turn: the
    same angle, within one fp32 rounding at 2 pi around the circle, and in [0, 2 pi]."""
    args, states = recurrence_args(1, 3, 1, 2, 16, 16, seed=8)
    args[8] = torch.tensor([-1e-19, 2e-19, 1e-19]).view(1, 3, 1, 1).expand(1, 3, 2, 4).clone()
    states = States(torch.zeros(1, 2, 4), *states[1:])
    want = oracle(args, states)[1].angle
    got = mamba3_siso_forward(*args, states, chunk_size=16)[1].angle.double()
    assert difference(got, want, TWO_PI).max() <= unit_roundoff(torch.float32) * TWO_PI
    assert ((got >= 0) & (got <= TWO_PI)).all()


@triton.jit
def cos_sin_kernel(theta, cos, sin, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    c, s = cos_sin(tl.load(theta + i, mask=i < n, other=0.0))
    tl.store(cos + i, c, mask=i < n)
    tl.store(sin + i, s, mask=i < n)


def test_the_chunk_kernels_cosine_and_sine_are_within_two_units_of_the_exact():
    """ops.cos_sin (the chunk kernels' rotations) against float64 cos and sin: within 2u
    absolute (u = 2^-24) over [0, 2 pi], the quarter turns and both ends included; NaN
    stays NaN."""
    quarter = torch.arange(9, dtype=torch.float64) * (math.pi / 4)
    edges = torch.cat([quarter, quarter.nextafter(quarter + 1), quarter.nextafter(quarter - 1)])
    theta = torch.cat([torch.rand(1 << 16, dtype=torch.float64, generator=torch.Generator()
                                  .manual_seed(3)) * 2 * math.pi,
                       edges.clamp(0, 2 * math.pi), torch.tensor([math.nan], dtype=torch.float64)])
    cos, sin = torch.empty_like(theta, dtype=torch.float32), torch.empty_like(theta, dtype=torch.float32)
    cos_sin_kernel[(triton.cdiv(theta.numel(), 1024),)](theta, cos, sin, theta.numel(), BLOCK=1024)
    u = unit_roundoff(torch.float32)
    assert (cos[:-1].double() - theta[:-1].cos()).abs().max() <= 2 * u
    assert (sin[:-1].double() - theta[:-1].sin()).abs().max() <= 2 * u
    assert cos[-1].isnan() and sin[-1].isnan()


def test_the_short_reduction_of_a_phase_is_the_exact_fmods_bit_for_bit():
    """ops.mod_two_pi_near (a few fmas: the phases' blocks and carries) against mod_two_pi (the
    exact fmod) and torch.remainder, the reference's, over its range |x| < 2^40: the same
    bits, signed zeros included, at every multiple of 2 pi and both its neighbours."""
    x = reduction_inputs()
    exact, near = reductions(x)
    assert same_bits(exact, near)
    assert same_bits(torch.remainder(x, 2 * math.pi), near)


def test_the_phases_running_sums_are_the_token_by_token_walks_phases():
    """turn_sums_kernel sums the turns over blocks of PHASE_BLOCK tokens where every |dt| is
    at most D = SUMS_MAX_DT, and phase_carry_kernel walks token by token otherwise: the two
    give the same angles around the circle, within the sums' rounding. A block's running
    sums are at most B D pi (B = PHASE_BLOCK), B roundings of u64 B D pi; a token's phase adds
    its block's carry (in [0, 2 pi]) and reduces, and each block's carry is the last one's
    so formed: a rounding of u64 (2 pi + B D pi) and one of u64 2 pi (mod 2 pi of a
    negative) per block and once more at the token, all under T (B + 1) u64 (2 pi + B D pi);
    the walk rounds theta + turn (at most 2 pi + D pi) once a token, T u64 (2 pi + D pi).
    Head 0: turns of exactly +-pi (|tanh| = 1 at angles of 40, dt = 1) reach the range's
    edges: pair 0 walks 0, pi, 2 pi (-> 0), -pi (-> pi), ...; pair 1 starts just under 2 pi
    and turns by pi (just under 3 pi); the rest is random. Head 1: dt anywhere in [-D, D],
    D at every fourth token. One dt just over D at the last token sends the same sequence
    down the walk. Three blocks: carries, and a last block cut short."""
    B = m3_forward.PHASE_BLOCK
    D = m3_forward.SUMS_MAX_DT.value
    T = 3 * B - B // 2
    args, states = recurrence_args(1, T, 1, 2, 16, 16, seed=9)
    gen = torch.Generator().manual_seed(9)
    A = args[8].shape[-1]
    angles = torch.randn(1, T, 2, A, generator=gen) * 3
    angles[0, :, 0, 0] = 40.0 * torch.tensor([1.0, 1.0, -1.0, 1.0]).repeat(T // 4)
    angles[0, 1::3, 0, 1] = 40.0
    dt = torch.rand(1, 2, T, generator=gen) * 2 - 1
    dt[0, 0] = 1.0
    dt[0, 1] *= D
    dt[0, 1, ::4] = -D
    theta0 = torch.zeros(1, 2, A)
    theta0[0, 0, 1] = TWO_PI - 1e-7
    args[8], args[4] = angles, dt
    states = States(theta0, *states[1:])
    sums = mamba3_siso_forward(*args, states, chunk_size=16, store=True)[2].phase
    dt_large = dt.clone()
    dt_large[..., -1] = D * 1.01
    args[4] = dt_large
    walk = mamba3_siso_forward(*args, states, chunk_size=16, store=True)[2].phase
    u64 = unit_roundoff(torch.float64)
    bound = (T * (B + 1) * u64 * (TWO_PI + B * D * math.pi)
             + T * u64 * (TWO_PI + D * math.pi))
    assert difference(sums[:, :-1], walk[:, :-1], TWO_PI).max() <= bound
    assert not torch.equal(sums[:, :-1], walk[:, :-1])  # the two paths both ran
    for phases in (sums, walk):
        assert ((phases >= 0) & (phases <= TWO_PI)).all()


def test_the_decay_gradient_where_the_decays_nearly_vanish():
    """adt = -30 at every token (alpha = 9e-14): every term of the adt gradient carries a
    decay, so the gradient is ~1e-13 of the others. Summed as row sums minus column sums and
    <dS, S_next> - w u (equal in exact arithmetic), the O(1) terms cancel and leave u times
    them (kdiff ORD-01 at normal + 1e4: -2e10 where the oracle has -0); collected term by term
    it keeps its relative accuracy, within the backward's bound of its own scale."""
    B, T, Hqk, G, K, V, C = 1, 20, 1, 2, 16, 16, 16
    args, states = recurrence_args(B, T, Hqk, G, K, V, seed=12)
    args[3] = torch.full_like(args[3], -30.0)
    _, got = forward_backward(lambda *a: mamba3_siso(*a, chunk_size=C), args, states,
                              torch.float32)
    _, want = forward_backward(mamba3_siso_recurrence, args, states, torch.float64)
    bound = gamma(depth(T, K, V, C) + T, unit_roundoff(torch.float32))
    assert (got[3].double() - want[3]).abs().max() <= bound * want[3].abs().max()


# This module runs the kernels through the interpreter (TRITON_INTERPRET is read when a kernel
# is decorated); the compiled kernels run in a fresh interpreter without it. It prints, per
# path, each of the 15 gradients' normwise error against the float64 oracle and, for a NaN
# in v, the judged elements whose class differs from the oracle's (as the test above).
COMPILED_ON_CUDA = """
import json, math, sys
import torch
from kdiff.kernels.mamba3 import backward, forward, mamba3_siso_recurrence
from kdiff.kernels.mamba3.problems import activations, sequence_inputs
from kdiff.kernels.mamba3.reference import (
    ROTATION_BLOCKS,
    TWO_PI,
    States,
    expand_heads,
    rotate,
)
from kdiff.numerics.oracle import MagnitudeTracer, run_oracle
B, T, Hqk, G, K, V, C = (int(x) for x in sys.argv[1:])
torch.manual_seed(0)
q, k, v, a, dt, trap, qb, kb, angles, D, z, *states = sequence_inputs(B, T, Hqk, G, K, V)
q, k, adt, dt = activations(q, k, a, dt)
clean = [q, k, v, adt, dt, trap, qb, kb, angles, D, z, *states]
real = backward.recurrent_backward
force = False
def gated(*args, when, **kwargs):
    return real(*args, when=torch.ones_like(when) if force else when, **kwargs)
backward.recurrent_backward = gated
def grads(fn, xs, dtype, device):
    xs = [x.to(device, dtype, copy=True).requires_grad_() for x in xs]
    out, final = fn(*xs[:11], States(*xs[11:]))
    outs = [out, *final]
    gen = torch.Generator().manual_seed(7)
    cot = [torch.randn(o.shape, generator=gen, dtype=torch.float64).to(device, dtype)
           for o in outs]
    return [g.detach().cpu().double() for g in [*outs, *torch.autograd.grad(outs, xs, cot)]]
def chunked(*xs):
    return backward.mamba3_siso(*xs, chunk_size=C)
def classes(t):
    return t.isnan() * 1 + (t == math.inf) * 2 + (t == -math.inf) * 3
want = grads(mamba3_siso_recurrence, clean, torch.float64, "cuda")
result = {}
for path in ("chunked", "fallback"):
    force = path == "fallback"
    got = grads(chunked, clean, torch.float32, "cuda")
    result[path] = [((g - w).abs().max() / w.abs().max()).item()
                    for g, w in zip(got[5:], want[5:])]
force = False
result["bf16_finite"] = all(bool(g.isfinite().all())
                            for g in grads(chunked, clean, torch.bfloat16, "cuda"))
# the inference forward in each of its forms, the one walk also at its own chunks
for form, walk, chunk in (("one walk", True, C), ("one walk, own chunks", True, None),
                          ("two kernels", False, C)):
    forward.walks_once = lambda *_, walk=walk: walk
    for dtype in (torch.float32, torch.bfloat16):
        xs = [x.to("cuda", dtype) for x in clean]
        out, final = forward.mamba3_siso_forward(*xs[:11], States(*xs[11:]), chunk_size=chunk)
        got = [o.cpu().double() for o in (out, *final)]
        if dtype == torch.float32:
            result[form] = [((g - w).abs().max() / w.abs().max()).item()
                            for g, w in zip(got, want[:5])]
        else:
            result["bf16_finite"] &= all(bool(g.isfinite().all()) for g in got)
clean[2][0, T // 2, 1, 3] = math.nan
got, oracle = (grads(f, clean, d, "cuda") for f, d in ((chunked, torch.float32),
               (mamba3_siso_recurrence, torch.float64)))
ref = grads(mamba3_siso_recurrence, clean, torch.float32, "cuda")
result["nan_mask_mismatches"] = sum(
    int(((classes(o) == classes(r)) & (classes(g) != classes(o))).sum())
    for g, o, r in zip(got, oracle, ref))
print(json.dumps(result))
"""


@pytest.mark.gpu
def test_compiled_kernels_match_the_oracle_on_cuda():
    """The compiled kernels at the layer's head sizes (K 128, V 64, 32 angles; two chunks of
    64, grouped heads): the chunked backward and its forced token-by-token fallback, and the
    inference forward in both its forms (one walk, at C and at its own chunks; the states'
    walk and the chunks at once), within their bounds (module docstring) of the float64
    oracle, and a NaN in v giving the oracle's masks through the fallback. In bf16 only that every launch fits and every result is
    finite: at these depths (N ~ 1,400) the error model's bf16 bound exceeds 1."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    B, T, Hqk, G, K, V, C = 2, 100, 2, 2, 128, 64, 64
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", COMPILED_ON_CUDA,
                           *map(str, (B, T, Hqk, G, K, V, C))], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    for path, N in (("chunked", depth(T, K, V, C) + T),
                    ("fallback", depth_recurrent_backward(T, K)),
                    ("one walk", depth(T, K, V, C)), ("two kernels", depth(T, K, V, C)),
                    ("one walk, own chunks", depth(T, K, V, m3_forward.WALK_CHUNK))):
        bound = gamma(N, unit_roundoff(torch.float32))
        worst = max(result[path])
        assert worst <= bound, f"{path}: {result[path]} against {bound:.3e}"
    assert result["nan_mask_mismatches"] == 0
    assert result["bf16_finite"], "bf16: a non-finite output or gradient from finite inputs"


PHASE_ON_CUDA = """
import json, sys, torch
from kdiff.kernels.mamba3.forward import mamba3_siso_forward, mamba3_siso_step
from kdiff.kernels.mamba3.ops import cos_sin
from kdiff.kernels.mamba3.problems import activations, sequence_inputs
from kdiff.kernels.mamba3.reference import (
    ROTATION_BLOCKS,
    TWO_PI,
    States,
    expand_heads,
    rotate,
)
from kdiff.numerics.oracle import MagnitudeTracer, run_oracle
torch.manual_seed(6)  # recurrence_args' draw
q, k, v, a, dt, trap, qb, kb, angles, D, z, theta, ssm, kst, vst = sequence_inputs(1, 1, 1, 2, 16, 16)
q, k, adt, dt = activations(q, k, a, dt)
args = [q, k, v, adt, dt, trap, qb, kb, angles, D, z]
theta = torch.tensor([[1e36, -3e37, 1e19, 2.5], [-1e36, 7e30, 3e38, -1e-20]]).view(1, 2, 4)
args[8] = torch.full((1, 1, 2, 4), 0.5)
cuda = [x.cuda() for x in args]
states = States(*(x.cuda() for x in (theta, ssm, kst, vst)))
q, k, v, adt, dt, trap, qb, kb, angles, D, z = cuda
_, step = mamba3_siso_step(q[:, 0], k[:, 0], v[:, 0], adt[..., 0], dt[..., 0], trap[..., 0],
                           qb, kb, angles[:, 0], D, z[:, 0], states)
_, chunked = mamba3_siso_forward(*cuda, states, chunk_size=16)
print(json.dumps([step.angle.cpu().double().tolist(), chunked.angle.cpu().double().tolist()]))
"""


NEGATIVE_ZERO_ON_CUDA = """
import json, torch
from kdiff.kernels.mamba3.forward import PHASE_BLOCK, mamba3_siso_forward
from kdiff.kernels.mamba3.problems import activations, sequence_inputs
from kdiff.kernels.mamba3.reference import States
torch.manual_seed(10)
T = 2 * PHASE_BLOCK + 3
q, k, v, a, dt, trap, qb, kb, angles, D, z, theta, ssm, kst, vst = sequence_inputs(1, T, 1, 2, 16, 16)
q, k, adt, dt = activations(q, k, a, dt)
args = [x.cuda() for x in (q, k, v, adt, dt, trap, qb, kb, torch.full_like(angles, -0.0), D, z)]
states = States(*(x.cuda() for x in (torch.full_like(theta, -0.0), ssm, kst, vst)))
_, final, saved = mamba3_siso_forward(*args, states, chunk_size=16, store=True)
print(json.dumps([bool(final.angle.signbit().all()), bool(saved.phase.signbit().all()),
                  bool((final.angle == 0).all()), bool((saved.phase == 0).all())]))
"""


@pytest.mark.gpu
def test_a_negative_zero_phase_keeps_its_sign_from_block_to_block_on_cuda():
    """From -0.0 with turns of -0.0 (angles of -0.0, dt > 0) the reference's phase is -0.0 at
    every token (-0.0 + -0.0 = -0.0; the exact fmod keeps the sign). The running sums carry
    a block's last phase into the next, taken out of the block as a sum with -0.0 elsewhere,
    which keeps it. Compiled only: the interpreter's tl.sum is numpy's, which starts from
    +0.0 and so turns -0.0 into +0.0 (on the CPU the phases lose the sign at every block's
    end, the old token-by-token walk at every token)."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", NEGATIVE_ZERO_ON_CUDA], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1]) == [True, True, True, True]


@pytest.mark.gpu
def test_the_short_reduction_of_a_phase_is_the_exact_fmods_bit_for_bit_on_cuda():
    """As the interpreted test above, compiled: the fmas single-rounded on the device and no
    sign of a zero folded away."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    script = os.path.join(os.path.dirname(__file__), "mamba3_reductions.py")
    done = subprocess.run([sys.executable, script], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1]) == [True, True]


@pytest.mark.gpu
def test_the_phase_of_a_huge_angle_is_reduced_exactly_on_cuda():
    """Compiled, a float `%` is an approximate frem (x - y trunc(x / y)): on the H200 a phase of
    1e36 came out as -5.5e19. The kernels reduce with an exact fmod (ops.fmod_two_pi): every
    phase in [0, 2 pi), equal to the oracle's to the fp32 rounding of such a value."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    args, states = recurrence_args(1, 1, 1, 2, 16, 16, seed=6)
    theta = torch.tensor([[1e36, -3e37, 1e19, 2.5], [-1e36, 7e30, 3e38, -1e-20]])
    args[8] = torch.full((1, 1, 2, 4), 0.5)
    states = States(theta.view(1, 2, 4), *states[1:])
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", PHASE_ON_CUDA], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    want = oracle(args, states)[1].angle
    for got in json.loads(done.stdout.splitlines()[-1]):
        got = torch.tensor(got, dtype=torch.float64)
        assert ((got >= 0) & (got < 2 * math.pi)).all(), got
        assert (got - want).abs().max() <= unit_roundoff(torch.float32) * 2 * math.pi, (got, want)


# (input index, element, value) whose gradient of v_t k'_t^T is the sum of two steps' terms,
# dS_t cur_t + dS_{t+1} prev_{t+1}, of opposite signs at an element where k'_t (a k_bias
# column past the angles: every token's key) or v_t is infinite: autograd sums the two
# before the outer product's backward and gets +-Inf; contracting each with the Inf apart
# gave Inf - Inf, NaN (kdiff EXC-01, problem 2, dv at one element)
PAIR_INJECTIONS = [(7, (0, 7), -math.inf), (2, (0, 6, 0, 3), math.inf)]


@pytest.mark.parametrize("index,element,value", PAIR_INJECTIONS)
def test_an_infinite_key_or_value_keeps_the_oracles_infs_in_dv_and_dk(index, element, value,
                                                                       monkeypatch):
    test_a_non_finite_input_gives_the_oracles_gradient_masks(index, element, value,
                                                             monkeypatch)
