"""The token mixers: the gated linear recurrence family (GDN, simple GLA, GLA, KDA) and
Mamba-3 SISO, each through one of three implementations of the same recurrence,

    ours   kdiff's chunked Triton kernels (kdiff.kernels.gdn; kdiff.kernels.mamba3)
    fla    fla-core's chunked Triton kernels (fla.ops, imported when asked for); fla has no
           Mamba-3, so asking for it there is an error (Mamba3Call)
    torch  plain PyTorch in fp32, chunked (the reference without fla): chunked_recurrence
           below; for Mamba-3, kdiff.kernels.mamba3.chunked.mamba3_siso_chunked

The gated family's calls (MixerCall) take q, k [B, T, H, K], v [B, T, H, V], a log-space
gate g ([B, T, H] scalar or [B, T, H, K] per channel) and beta [B, T, H] or None (no delta
rule), with the convention of kdiff.kernels.gdn.reference.gated_recurrence (and fla's):

    S_t = D_t S_{t-1} - beta_t k_t (k_t^T D_t S_{t-1}) + beta_t k_t v_t^T,   D_t = diag(exp(g_t))
    o_t = scale S_t^T q_t

Mamba-3's (Mamba3Call) take kdiff.kernels.mamba3.reference.mamba3_siso_recurrence's arguments
(q, k [B, T, Hqk, K], v, z [B, T, H, V], adt, dt, trap [B, H, T], q_bias, k_bias [H, K],
angles [B, T, H, A], D [H]) from zero initial states, and return out [B, T, H, V].
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import torch


class Family(str, Enum):
    GDN = "gdn"              # scalar gate, delta rule
    SIMPLE_GLA = "simple_gla"  # scalar gate, no delta rule
    GLA = "gla"              # per-channel gate, no delta rule
    KDA = "kda"              # per-channel gate, delta rule
    MAMBA3 = "mamba3"        # Mamba-3 SISO: trapezoidal rule, rotary phase, z gate, D skip

    @property
    def per_channel(self) -> bool:
        return self in (Family.GLA, Family.KDA)

    @property
    def delta(self) -> bool:
        return self in (Family.GDN, Family.KDA)


GATED = (Family.GDN, Family.SIMPLE_GLA, Family.GLA, Family.KDA)  # MixerCall's members


class Impl(str, Enum):
    OURS = "ours"
    FLA = "fla"
    TORCH = "torch"


def chunked_recurrence(q, k, v, g, beta, scale: float, chunk: int = 16) -> torch.Tensor:
    """The recurrence in chunks of `chunk` tokens, in fp32, differentiable by autograd. Within a
    chunk, with gc the chunk-local cumulative log-gate and S0 the chunk's initial state,
    u_r = beta_r (v_r - k_r^T D_r S_{r-1}) (u_r = v_r without the delta rule) solves the unit
    lower-triangular system (I + diag(beta) M) U = diag(beta) (V - (K * exp(gc)) S0) with
    M_rs = sum_c k_rc k_sc exp(gc_rc - gc_sc) (s < r); then
    O = scale ((Q * exp(gc)) S0 + (tril(Q K^T decay)) U) and
    S_next = exp(gc_C) S0 + (K * exp(gc_C - gc))^T U. Decays enter only as exp of differences
    gc_r - gc_s with s <= r (<= 0), masked before the exponential, so nothing overflows."""
    B, T, H, K = q.shape
    V = v.shape[-1]
    if T % chunk:
        raise ValueError(f"T = {T} must be a multiple of the chunk ({chunk})")
    N, C = T // chunk, chunk
    f32 = [None if x is None else x.float() for x in (q, k, v, g, beta)]
    q, k, v, g, beta = (None if x is None else x.reshape(B, N, C, H, *x.shape[3:]).transpose(2, 3)
                        for x in f32)  # [B, N, H, C, ...]
    per_channel = g.dim() == 5
    gc = g.cumsum(3)  # [B, N, H, C(, K)]
    strict = torch.ones(C, C, dtype=torch.bool, device=q.device).tril(-1)
    causal = torch.ones(C, C, dtype=torch.bool, device=q.device).tril()

    def decayed(a, b, mask):  # sum_c a_rc b_sc exp(gc_rc - gc_sc) where mask[r, s], else 0
        if per_channel:
            diff = gc[..., :, None, :] - gc[..., None, :, :]  # [B, N, H, C, C, K]
            diff = diff.masked_fill(~mask[..., None], float("-inf"))
            return torch.einsum("...rc,...sc,...rsc->...rs", a, b, diff.exp())
        diff = (gc[..., :, None] - gc[..., None, :]).masked_fill(~mask, float("-inf"))
        return (a @ b.transpose(-1, -2)) * diff.exp()

    gamma = gc.exp() if per_channel else gc.exp()[..., None]  # decay from the chunk start
    if beta is not None:
        system = torch.eye(C, device=q.device) + beta[..., None] * decayed(k, k, strict)
        w = torch.linalg.solve_triangular(system, beta[..., None] * (k * gamma), upper=False,
                                          unitriangular=True)
        u_local = torch.linalg.solve_triangular(system, beta[..., None] * v, upper=False,
                                                unitriangular=True)
    attn = decayed(q, k, causal) * scale
    last = gc[..., -1:, :] if per_channel else gc[..., -1:]
    to_end = (last - gc).exp() if per_channel else (last - gc).exp()[..., None]
    S = q.new_zeros(B, H, K, V)
    out = []
    for n in range(N):
        u = (u_local[:, n] - w[:, n] @ S) if beta is not None else v[:, n]
        out.append(scale * (q[:, n] * gamma[:, n]) @ S + attn[:, n] @ u)
        end = last[:, n].exp().transpose(-1, -2) if per_channel else last[:, n].exp()[..., None]
        S = end * S + (k[:, n] * to_end[:, n]).transpose(-1, -2) @ u
    o = torch.stack(out, 1)  # [B, N, H, C, V]
    return o.transpose(2, 3).reshape(B, T, H, V)


def fla_module(package: str):
    """fla.ops.<package> on its pure Triton path, as benchmarks/gdn_bench.py times it: fla's
    FlashQLA/TileLang backends off, and its Hopper guard bypassed (with Triton >= 3.4 and
    < 3.7.1 on Hopper its gated chunk_bwd_dqkwg refuses to run, fla #640)."""
    import importlib
    import os
    os.environ.setdefault("FLA_FLASH_QLA", "0")
    os.environ.setdefault("FLA_TILELANG", "0")
    importlib.import_module("fla.ops.common.chunk_o").TRITON_ABOVE_3_7_1 = True
    return importlib.import_module(f"fla.ops.{package}")


@dataclass(frozen=True)
class MixerCall:
    family: Family
    impl: Impl

    def __call__(self, q, k, v, g, beta) -> torch.Tensor:
        scale = q.shape[-1] ** -0.5
        if self.impl is Impl.TORCH:
            with torch.autocast(q.device.type, enabled=False):
                return chunked_recurrence(q, k, v, g, beta, scale).to(q.dtype)
        ops = self._ops()
        args = (q, k, v, g) if beta is None else (q, k, v, g, beta)
        out = ops(*args, scale=scale)
        return out[0] if isinstance(out, tuple) else out  # fla returns (o, final_state)

    def _ops(self):
        if self.impl is Impl.OURS:
            from kdiff.kernels import gdn as module
        else:
            module = fla_module(self._fla_package())
        name = {Family.GDN: "chunk_gated_delta_rule", Family.SIMPLE_GLA: "chunk_simple_gla",
                Family.GLA: "chunk_gla", Family.KDA: "chunk_kda"}[self.family]
        return getattr(module, name)

    def _fla_package(self) -> str:
        return {Family.GDN: "gated_delta_rule", Family.SIMPLE_GLA: "simple_gla",
                Family.GLA: "gla", Family.KDA: "kda"}[self.family]


# Chunk sizes of the Mamba-3 calls: the layer's 64 (mamba_ssm's SISO default) on a GPU; 16
# through the CPU interpreter keeps the tiny model's kernels quick and, at the tests' T = 24,
# crosses a chunk boundary with a ragged last chunk (the reference runs 64 everywhere: fewer
# Python iterations, and then the two sides chunk differently).
MAMBA3_CHUNK = {"ours_cuda": 64, "ours_cpu": 16, "torch": 64}


@dataclass(frozen=True)
class Mamba3Call:
    impl: Impl

    def __post_init__(self):
        if self.impl is Impl.FLA:
            raise ValueError("fla has no Mamba-3: use --mixer-impl torch for the reference "
                             "(kdiff.kernels.mamba3.chunked, chunked PyTorch in fp32)")

    def __call__(self, q, k, v, adt, dt, trap, q_bias, k_bias, angles, D, z) -> torch.Tensor:
        args = (q, k, v, adt, dt, trap, q_bias, k_bias, angles, D, z)
        if self.impl is Impl.TORCH:
            from kdiff.kernels.mamba3.chunked import mamba3_siso_chunked
            with torch.autocast(q.device.type, enabled=False):
                out, _ = mamba3_siso_chunked(*(None if x is None else x.float() for x in args),
                                             chunk_size=MAMBA3_CHUNK["torch"])
            return out.to(q.dtype)
        from kdiff.kernels.mamba3.backward import mamba3_siso
        from kdiff.kernels.mamba3.reference import zero_states
        B, H, K, V, A = q.shape[0], v.shape[2], q.shape[-1], v.shape[-1], angles.shape[-1]
        states = zero_states(B, H, K, V, A, adt)  # fp32, as mamba_ssm's angle and ssm states
        chunk = MAMBA3_CHUNK["ours_cuda" if q.is_cuda else "ours_cpu"]
        out, _ = mamba3_siso(*args, states, chunk_size=chunk)
        return out
