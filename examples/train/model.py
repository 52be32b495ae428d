"""A decoder language model whose token mixer is one of the gated linear recurrence family or
Mamba-3 SISO (below).

    embeddings -> N x [RMSNorm -> mixer -> residual -> RMSNorm -> SwiGLU -> residual]
               -> RMSNorm -> untied head

The mixer (what was chosen, kept simple): q, k, v linear projections to H heads of K = V =
head_dim, no short convolution; q and k L2-normalised per head (the delta rule's stability
needs unit keys; the same for every member so that they differ only in the recurrence); gates
from projections of the input as in fla's layers:
    GDN, simple GLA   g = -exp(A_log_h) softplus(W_a x + dt_bias_h)      one per head (Mamba-2's)
    KDA               g = -exp(A_log_h) softplus(W_f2 W_f1 x + dt_bias)  one per key channel
    GLA               g = logsigmoid(W_g2 W_g1 x) / 16                   one per key channel
    beta (delta rule) sigmoid(W_b x)
(W_f1, W_g1 of rank 16, as fla's low-rank gate projections); the output is RMS-normalised per
head and projected back by o_proj.

Mamba-3 (Mamba3Mixer) has the projections of state-spaces/mamba's mamba_ssm/modules/mamba3.py
(SISO, rope_fraction 0.5, is_outproj_norm False), with no short convolution (the layer has
none either): one in_proj to [z, x, B, C, dd_dt, dd_A, trap, angles], then
    q = C, k = B        RMS-normed over K (learnt weight, eps 1e-5), plus C_bias, B_bias (ones)
    v = x, z            V-wide per head; out = y silu(z) inside the recurrence (no output norm)
    dt = softplus(dd_dt + dt_bias)   dt_bias set so that dt starts log-uniform in [1e-3, 1e-1]
    adt = A dt, A = -max(heavy_tail(dd_A), 1e-4)     heavy_tail(x) = 1 + x (x >= 0), 1/(1 - x)
    trap                (lam = sigmoid(trap) inside the recurrence)
    angles              A = K / 4 rotary angles, shared by the heads
    D                   skip, ones
and out_proj back to d. Head sizes: K = head_dim (mamba_ssm's d_state, 128 at 100m and 1.1b),
V = head_dim / 2 (its headdim, 64), H = d / V heads (expand 1: x and z are d wide) over
d / (2 K) key heads (B and C are d / 2 wide each), so that the layer's matrices hold 4 d^2
weights as the other members' q, k, v and o projections do (mamba_ssm's defaults, expand 2
and one key head, would hold 6 d^2 + 2 d K).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from mixers import Family, Impl, Mamba3Call, MixerCall

GATE_RANK = 16          # fla's low-rank gate projections (gla, kda layers)
GLA_GATE_NORMALIZER = 16  # fla's GatedLinearAttention gate_logit_normalizer
MAMBA3_A_FLOOR = 1e-4     # mamba_ssm Mamba3's A_floor: the decay rate -A is at least this
MAMBA3_DT_INIT_FLOOR = 1e-4  # and its dt_init_floor


@dataclass(frozen=True)
class ModelConfig:
    d_model: int
    n_layers: int
    head_dim: int
    mlp_hidden: int
    vocab: int = 256  # bytes

    @property
    def n_heads(self) -> int:
        return self.d_model // self.head_dim


CONFIGS = {
    "tiny": ModelConfig(d_model=32, n_layers=2, head_dim=16, mlp_hidden=64),
    "100m": ModelConfig(d_model=768, n_layers=14, head_dim=128, mlp_hidden=2048),
    "1.1b": ModelConfig(d_model=2048, n_layers=22, head_dim=128, mlp_hidden=5632),
}


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        # in fp32 with the fp32 weight (a bf16 input beside an fp32 weight has no fused path)
        return F.rms_norm(x.float(), (x.shape[-1],), self.weight, self.eps).to(x.dtype)


class SwiGLU(nn.Module):
    def __init__(self, d: int, hidden: int):
        super().__init__()
        self.gate_up = nn.Linear(d, 2 * hidden, bias=False)
        self.down = nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        gate, up = self.gate_up(x).chunk(2, -1)
        return self.down(F.silu(gate) * up)


class Mixer(nn.Module):
    def __init__(self, cfg: ModelConfig, family: Family, impl: Impl):
        super().__init__()
        d, H, Dh = cfg.d_model, cfg.n_heads, cfg.head_dim
        self.family, self.call, self.H, self.Dh = family, MixerCall(family, impl), H, Dh
        self.qkv = nn.Linear(d, 3 * H * Dh, bias=False)
        if family is Family.GLA:
            self.gate = nn.Sequential(nn.Linear(d, GATE_RANK, bias=False),
                                      nn.Linear(GATE_RANK, H * Dh, bias=True))
        else:
            per_channel = family.per_channel
            self.gate = (nn.Sequential(nn.Linear(d, GATE_RANK, bias=False),
                                       nn.Linear(GATE_RANK, H * Dh, bias=False))
                         if per_channel else nn.Linear(d, H, bias=False))
            # Mamba-2's initialisation: A in [1, 16], dt in [1e-3, 1e-1] log-uniform
            self.A_log = nn.Parameter(torch.empty(H).uniform_(1, 16).log())
            dt = torch.exp(torch.empty(H * Dh if per_channel else H).uniform_(
                math.log(1e-3), math.log(1e-1)))
            self.dt_bias = nn.Parameter(dt + torch.log(-torch.expm1(-dt)))  # softplus^-1(dt)
        self.beta = nn.Linear(d, H, bias=False) if family.delta else None
        self.o_norm = RMSNorm(Dh)
        self.o_proj = nn.Linear(H * Dh, d, bias=False)

    def gates(self, x):
        B, T, _ = x.shape
        raw = self.gate(x).float()
        if self.family is Family.GLA:
            return F.logsigmoid(raw).view(B, T, self.H, self.Dh) / GLA_GATE_NORMALIZER
        if self.family.per_channel:
            g = -self.A_log.exp()[:, None] * F.softplus(raw.view(B, T, self.H, self.Dh)
                                                        + self.dt_bias.view(self.H, self.Dh))
            return g
        return -self.A_log.exp() * F.softplus(raw + self.dt_bias)

    def forward(self, x):
        B, T, _ = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.H, self.Dh).unbind(2)
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
        beta = None if self.beta is None else torch.sigmoid(self.beta(x))
        # the mixer's q, k, v, beta in the compute dtype (autocast runs the norms in fp32), the
        # gate in fp32
        device = x.device.type
        dtype = (torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device)
                 else x.dtype)
        q, k, v = q.to(dtype), k.to(dtype), v.to(dtype)
        beta = None if beta is None else beta.to(dtype)
        o = self.call(q, k, v, self.gates(x), beta)
        return self.o_proj(self.o_norm(o).reshape(B, T, -1))


def heavy_tail(x):
    """mamba_ssm's heavy_tail_activation: 1 + x for x >= 0, 1 / (1 - x) below; positive."""
    return x.clamp_min(0) + torch.reciprocal(1 - x.clamp_max(0))


class Mamba3Mixer(nn.Module):
    """Mamba-3 SISO as mamba_ssm's Mamba3 layer projects it (the module docstring)."""

    def __init__(self, cfg: ModelConfig, impl: Impl):
        super().__init__()
        d = cfg.d_model
        self.K, self.V = cfg.head_dim, cfg.head_dim // 2
        self.H, self.Hqk, self.n_angles = d // self.V, d // (2 * self.K), self.K // 4
        if self.Hqk * 2 * self.K != d or self.n_angles < 1:
            raise ValueError(f"mamba3: d_model {d} must be a multiple of twice the head dim "
                             f"{cfg.head_dim}, itself at least 4")
        self.call = Mamba3Call(impl)
        self.split = [d, d, self.Hqk * self.K, self.Hqk * self.K, self.H, self.H, self.H,
                      self.n_angles]
        # z, x, B, C, dd_dt, dd_A, trap, angles, in mamba_ssm's order
        self.in_proj = nn.Linear(d, sum(self.split), bias=False)
        self.B_norm, self.C_norm = RMSNorm(self.K, 1e-5), RMSNorm(self.K, 1e-5)
        # per head, flat as KDA's dt_bias (vectors: no weight decay, no matrix initialisation)
        self.B_bias = nn.Parameter(torch.ones(self.H * self.K))
        self.C_bias = nn.Parameter(torch.ones(self.H * self.K))
        dt = torch.exp(torch.empty(self.H).uniform_(math.log(1e-3), math.log(1e-1)))
        dt = dt.clamp_min(MAMBA3_DT_INIT_FLOOR)
        self.dt_bias = nn.Parameter(dt + torch.log(-torch.expm1(-dt)))  # softplus^-1(dt)
        self.D = nn.Parameter(torch.ones(self.H))
        self.out_proj = nn.Linear(d, d, bias=False)

    def forward(self, x):
        B, T, _ = x.shape
        H, K, V = self.H, self.K, self.V
        z, v, k, q, dd_dt, dd_A, trap, angles = self.in_proj(x).split(self.split, dim=-1)
        q = self.C_norm(q.view(B, T, self.Hqk, K))
        k = self.B_norm(k.view(B, T, self.Hqk, K))
        # the gates in fp32 ([B, H, T]; the angles [B, T, H, A]), q, k, v, z in the compute
        # dtype (autocast runs the norms in fp32), as for the other members
        dt = F.softplus(dd_dt.float() + self.dt_bias)
        adt = -heavy_tail(dd_A.float()).clamp_min(MAMBA3_A_FLOOR) * dt
        angles = angles.float()[:, :, None, :].expand(B, T, H, self.n_angles)
        device = x.device.type
        dtype = (torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device)
                 else x.dtype)
        q, k = q.to(dtype), k.to(dtype)
        v, z = v.reshape(B, T, H, V).to(dtype), z.reshape(B, T, H, V).to(dtype)
        y = self.call(q, k, v, adt.transpose(1, 2), dt.transpose(1, 2),
                      trap.float().transpose(1, 2), self.C_bias.view(H, K),
                      self.B_bias.view(H, K), angles, self.D, z)
        return self.out_proj(y.reshape(B, T, -1))


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig, family: Family, impl: Impl):
        super().__init__()
        self.norm1 = RMSNorm(cfg.d_model)
        self.mixer = (Mamba3Mixer(cfg, impl) if family is Family.MAMBA3
                      else Mixer(cfg, family, impl))
        self.norm2, self.mlp = RMSNorm(cfg.d_model), SwiGLU(cfg.d_model, cfg.mlp_hidden)

    def forward(self, x):
        x = x + self.mixer(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class LanguageModel(nn.Module):
    def __init__(self, cfg: ModelConfig, family: Family, impl: Impl):
        super().__init__()
        self.embed = nn.Embedding(cfg.vocab, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg, family, impl) for _ in range(cfg.n_layers))
        self.norm = RMSNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab, bias=False)
        std = cfg.d_model ** -0.5
        for name, p in self.named_parameters():
            if p.dim() == 2 and name.endswith(".weight"):  # matrices (no 2-D parameter else)
                nn.init.normal_(p, std=std)
            if name.endswith(("o_proj.weight", "down.weight")):  # residual outputs, GPT-2's
                p.data /= math.sqrt(2 * cfg.n_layers)

    def forward(self, tokens: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.norm(x))
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.reshape(-1))
