"""Honest production-style kernels, written in plain torch for the false-reject controls
(docs/false-rejects.md, "Computed integers, picks and normalisations", "More honest torch
kernels" and "Folded affines, distances, norms"): each computes a
reference's function another way, as production kernels do (a reciprocal scale, a stored
log-sum-exp, top-k of the logits, fp32 arithmetic behind a bf16 interface), and is judged by
every gate on the CPU. A rejection is either the candidate's own (read, and listed in the docs)
or a mistake of kdiff's.

    python benchmarks/honest_battery.py [NAME ...]

prints, per candidate, each gate's status and the detail of every gate that neither passed
nor skipped. About a minute on 2 cores for all 78.
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from kdiff.data.model import Case
from kdiff.judging.plugins import manager
from kdiff.judging.runconfig import RunConfig
from kdiff.verdicts.judge import judge_case

GATES = ["CMP-01", "CMP-02", "CMP-03", "EXC-01", "EXC-02", "ORD-01", "ORD-02", "PRC-01",
         "PRC-02", "PRC-03", "RES-01", "RES-02"]
HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"

CASES = {  # name: (get_inputs, the reference's forward, the candidate's forward)
 "fp8_per_token": ("torch.randn(32, 1024, dtype=torch.bfloat16)",
   "s = x.float().abs().amax(dim=1, keepdim=True).clamp_min(1e-12) / 448.0\n        return (x.float() / s).clamp(-448, 448).to(torch.float8_e4m3fn), s",
   "s = x.float().abs().amax(dim=1, keepdim=True).clamp_min(1e-12) / 448.0\n        return (x.float() * (1.0 / s)).clamp(-448, 448).to(torch.float8_e4m3fn), s"),
 "rmsnorm_bf16": ("torch.randn(32, 1024, dtype=torch.bfloat16)",
   "v = x.float().pow(2).mean(-1, keepdim=True)\n        return (x.float() / torch.sqrt(v + 1e-6)).to(x.dtype)",
   "v = (x.float() * x.float()).sum(-1, keepdim=True) / x.shape[-1]\n        return (x.float() * torch.rsqrt(v + 1e-6)).to(x.dtype)"),
 "moe_topk_routing": ("torch.randn(64, 16)",
   "p = torch.softmax(x, dim=-1)\n        w, i = torch.topk(p, 2, dim=-1)\n        return w / w.sum(-1, keepdim=True), i",
   "w, i = torch.topk(x, 2, dim=-1)\n        w = torch.softmax(w, dim=-1)\n        return w, i"),
 "softmax_exp2": ("torch.randn(32, 1000)",
   "return torch.softmax(x, dim=-1)",
   "m = x.amax(-1, keepdim=True)\n        e = torch.exp2((x - m) * 1.4426950408889634)\n        return e / e.sum(-1, keepdim=True)"),
 "int8_sym_quant_dequant_matmul": ("torch.randn(64, 256), torch.randn(256, 128)",
   "s = x.abs().amax(1, keepdim=True) / 127\n        q = torch.round(x / s).clamp(-127, 127).to(torch.int8)\n        return (q.float() @ w) * s",
   "s = x.abs().amax(1, keepdim=True) / 127\n        q = torch.round(x * (1 / s)).clamp(-127, 127)\n        return (q @ w) * s"),
 "layernorm_welford": ("torch.randn(32, 1024) * 3 + 5",
   "return F.layer_norm(x, (x.shape[-1],))",
   "mu = x.mean(-1, keepdim=True)\n        d = x - mu\n        var = (d * d).mean(-1, keepdim=True)\n        return d * torch.rsqrt(var + 1e-5)"),
 "silu_mul": ("torch.randn(32, 2048, dtype=torch.bfloat16)",
   "a, b = x.chunk(2, dim=-1)\n        return F.silu(a) * b",
   "a, b = x.chunk(2, dim=-1)\n        a32 = a.float()\n        return (a32 / (1 + torch.exp(-a32)) * b.float()).to(x.dtype)"),
 "cross_entropy": ("torch.randn(64, 500), torch.randint(0, 500, (64,))",
   "return F.cross_entropy(x, w)",
   "lse = torch.logsumexp(x, -1)\n        return (lse - x.gather(1, w[:, None])[:, 0]).mean()"),
 "argmax_logits_bf16": ("torch.randn(64, 512, dtype=torch.bfloat16), torch.randn(512, 1000, dtype=torch.bfloat16)",
   "return torch.argmax(x @ w, dim=-1)",
   "return torch.argmax(x.float() @ w.float(), dim=-1)"),
 "gelu_tanh": ("torch.randn(32, 1024)",
   "return F.gelu(x, approximate='tanh')",
   "return 0.5 * x * (1 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))"),
 "rope": ("torch.randn(2, 512, 64)",
   "pos = torch.arange(x.shape[1], dtype=torch.float32)[:, None]\n        inv = 1.0 / (10000 ** (torch.arange(0, 64, 2, dtype=torch.float32) / 64))\n        ang = pos * inv\n        c, s_ = ang.cos(), ang.sin()\n        a, b = x[..., ::2], x[..., 1::2]\n        return torch.stack([a * c - b * s_, a * s_ + b * c], -1).flatten(-2)",
   "pos = torch.arange(x.shape[1], dtype=torch.float32)[:, None]\n        inv = torch.exp(-torch.arange(0, 64, 2, dtype=torch.float32) / 64 * 9.210340371976184)\n        ang = pos * inv\n        c, s_ = ang.cos(), ang.sin()\n        a, b = x[..., ::2], x[..., 1::2]\n        return torch.stack([a * c - b * s_, a * s_ + b * c], -1).flatten(-2)"),
 "bf16_matmul_fp32acc": ("torch.randn(128, 512, dtype=torch.bfloat16), torch.randn(512, 256, dtype=torch.bfloat16)",
   "return x @ w",
   "return (x.float() @ w.float()).to(torch.bfloat16)"),
 "top_p_mask": ("torch.randn(16, 256)",
   "p = torch.softmax(x, -1)\n        sp, idx = p.sort(-1, descending=True)\n        drop = (sp.cumsum(-1) - sp) > 0.9\n        return torch.zeros_like(p).scatter(-1, idx, sp.masked_fill(drop, 0.0))",
   "p = torch.softmax(x, -1)\n        sp, idx = p.sort(-1, descending=True)\n        excl = torch.cat([torch.zeros_like(sp[:, :1]), sp[:, :-1].cumsum(-1)], -1)\n        return torch.zeros_like(p).scatter(-1, idx, torch.where(excl > 0.9, 0.0, sp))"),
 "causal_attention": ("torch.randn(2, 128, 64), torch.randn(2, 128, 64)",
   "q, k = x, w\n        sc = q @ k.transpose(1, 2) / 8.0\n        m = torch.ones(128, 128, dtype=torch.bool).tril()\n        return torch.softmax(sc.masked_fill(~m, float('-inf')), -1) @ k",
   "q, k = x, w\n        return F.scaled_dot_product_attention(q, k, k, is_causal=True)"),
 "logsoftmax": ("torch.randn(32, 1000) * 10",
   "return torch.log_softmax(x, -1)",
   "return x - torch.logsumexp(x, -1, keepdim=True)"),
 "conv_im2col": ("torch.randn(2, 8, 16, 16), torch.randn(16, 8, 3, 3)",
   "return F.conv2d(x, w, padding=1)",
   "cols = F.unfold(x, 3, padding=1)\n        return (w.flatten(1) @ cols).view(x.shape[0], 16, 16, 16)"),
 "softmax_via_lse": ("torch.randn(32, 1000) * 10",
   "return torch.softmax(x, -1)",
   "return torch.exp(x - torch.logsumexp(x, -1, keepdim=True))"),
 "ce_lse_minus_target": ("torch.randn(64, 500) * 10, torch.randint(0, 500, (64,))",
   "return F.cross_entropy(x, w, reduction='none')",
   "return torch.logsumexp(x, -1) - x.gather(1, w[:, None])[:, 0]"),
 "layernorm_bf16": ("torch.randn(32, 1024, dtype=torch.bfloat16)",
   "return F.layer_norm(x, (1024,))",
   "xf = x.float()\n        mu = xf.mean(-1, keepdim=True)\n        var = xf.var(-1, unbiased=False, keepdim=True)\n        return ((xf - mu) * torch.rsqrt(var + 1e-5)).to(x.dtype)"),
 "gemm_bias_gelu_bf16": ("torch.randn(64, 256, dtype=torch.bfloat16), torch.randn(256, 128, dtype=torch.bfloat16)",
   "return F.gelu(x @ w + 1.0)",
   "y = x.float() @ w.float() + 1.0\n        return (0.5 * y * (1 + torch.erf(y * 0.7071067811865476))).to(x.dtype)"),
 "online_softmax": ("torch.randn(16, 1024)",
   "return torch.softmax(x, -1)",
   "m = torch.full_like(x[:, :1], float('-inf'))\n        l = torch.zeros_like(x[:, :1])\n        for c in x.split(256, -1):\n            mn = torch.maximum(m, c.amax(-1, keepdim=True))\n            l = l * torch.exp(m - mn) + torch.exp(c - mn).sum(-1, keepdim=True)\n            m = mn\n        return torch.exp(x - m) / l"),
 "chunked_cumsum": ("torch.randn(8, 4096)",
   "return torch.cumsum(x, -1)",
   "c = x.view(8, 64, 64).cumsum(-1)\n        off = c[:, :, -1].cumsum(-1) - c[:, :, -1]\n        return (c + off[:, :, None]).view(8, 4096)"),
 "groupnorm": ("torch.randn(4, 32, 16, 16)",
   "return F.group_norm(x, 8)",
   "g = x.view(4, 8, -1)\n        mu = g.mean(-1, keepdim=True)\n        d = g - mu\n        return (d * torch.rsqrt((d * d).mean(-1, keepdim=True) + 1e-5)).view_as(x)"),
 "l2_normalize": ("torch.randn(64, 512)",
   "return F.normalize(x, dim=-1)",
   "return x * torch.rsqrt((x * x).sum(-1, keepdim=True).clamp_min(1e-24))"),
 "sigmoid_tanh": ("torch.randn(64, 512)",
   "return torch.sigmoid(x)",
   "return 0.5 * (1 + torch.tanh(0.5 * x))"),
 "pairwise_sum": ("torch.randn(4, 65536)",
   "return x.sum(-1)",
   "y = x\n        while y.shape[-1] > 1:\n            y = y[..., ::2] + y[..., 1::2]\n        return y[..., 0]"),
 "weight_only_int8": ("torch.randn(64, 256), torch.randn(128, 256)",
   "s = w.abs().amax(1, keepdim=True) / 127\n        q = torch.round(w / s).clamp(-127, 127)\n        return x @ (q * s).t()",
   "s = w.abs().amax(1, keepdim=True) / 127\n        q = torch.round(w * (1 / s)).clamp(-127, 127).to(torch.int8)\n        return (x @ q.float().t()) * s.t()"),
 "softplus": ("torch.randn(64, 512) * 10",
   "return F.softplus(x)",
   "return torch.clamp_min(x, 0) + torch.log1p(torch.exp(-x.abs()))"),
 "mse_loss": ("torch.randn(64, 512), torch.randn(64, 512)",
   "return F.mse_loss(x, w)",
   "d = x - w\n        return (d * d).sum() / d.numel()"),
 "attention_sdpa": ("torch.randn(2, 4, 128, 64), torch.randn(2, 4, 128, 64)",
   "return torch.softmax(x @ w.transpose(-1, -2) / 8.0, -1) @ w",
   "return F.scaled_dot_product_attention(x, w, w)"),
 "fp16_matmul": ("torch.randn(128, 512, dtype=torch.float16), torch.randn(512, 256, dtype=torch.float16)",
   "return x @ w",
   "return (x.float() @ w.float()).half()"),
 "bf16_softmax": ("torch.randn(64, 1000, dtype=torch.bfloat16)",
   "return torch.softmax(x, -1)",
   "return torch.softmax(x.float(), -1).to(x.dtype)"),
 "bf16_rmsnorm_weight": ("torch.randn(64, 1024, dtype=torch.bfloat16), torch.randn(1024, dtype=torch.bfloat16)",
   "v = x.float().pow(2).mean(-1, keepdim=True)\n        return (x.float() * torch.rsqrt(v + 1e-6)).to(x.dtype) * w",
   "v = x.float().pow(2).mean(-1, keepdim=True)\n        return (x.float() * torch.rsqrt(v + 1e-6) * w.float()).to(x.dtype)"),
 "fp16_layernorm": ("torch.randn(64, 1024, dtype=torch.float16)",
   "return F.layer_norm(x, (1024,))",
   "xf = x.float()\n        mu = xf.mean(-1, keepdim=True)\n        d = xf - mu\n        return (d * torch.rsqrt((d * d).mean(-1, keepdim=True) + 1e-5)).half()"),
 "bf16_conv": ("torch.randn(2, 16, 16, 16, dtype=torch.bfloat16), torch.randn(32, 16, 3, 3, dtype=torch.bfloat16)",
   "return F.conv2d(x, w, padding=1)",
   "return F.conv2d(x.float(), w.float(), padding=1).to(x.dtype)"),
 "bf16_sum": ("torch.randn(16, 8192, dtype=torch.bfloat16)",
   "return x.sum(-1)",
   "return x.float().sum(-1).to(x.dtype)"),
 "bf16_cumsum": ("torch.randn(16, 2048, dtype=torch.bfloat16)",
   "return x.cumsum(-1)",
   "return x.float().cumsum(-1).to(x.dtype)"),
 "bf16_swiglu": ("torch.randn(32, 256, dtype=torch.bfloat16), torch.randn(256, 512, dtype=torch.bfloat16)",
   "a, b = (x @ w).chunk(2, -1)\n        return F.silu(a) * b",
   "h = x.float() @ w.float()\n        a, b = h.chunk(2, -1)\n        return (a * torch.sigmoid(a) * b).to(x.dtype)"),
 "bf16_cross_entropy": ("torch.randn(64, 1000, dtype=torch.bfloat16), torch.randint(0, 1000, (64,))",
   "return F.cross_entropy(x.float(), w)",
   "xf = x.float()\n        return (torch.logsumexp(xf, -1) - xf.gather(1, w[:, None])[:, 0]).mean()"),
 "fp16_sdpa": ("torch.randn(2, 4, 64, 64, dtype=torch.float16), torch.randn(2, 4, 64, 64, dtype=torch.float16)",
   "return F.scaled_dot_product_attention(x, w, w)",
   "s = x.float() @ w.float().transpose(-1, -2) / 8.0\n        return (torch.softmax(s, -1) @ w.float()).half()"),
 "int8_matmul_int32": ("torch.randint(-128, 127, (64, 256), dtype=torch.int8), torch.randint(-128, 127, (256, 128), dtype=torch.int8)",
   "return x.int() @ w.int()",
   "return (x.float() @ w.float()).round().int()"),
 "split_k_matmul": ("torch.randn(64, 512), torch.randn(512, 96)",
   "return x @ w",
   "h = x.shape[1] // 2\n        return x[:, :h] @ w[:h] + x[:, h:] @ w[h:]"),
 "linear_relu_addmm": ("torch.randn(64, 256), torch.randn(128, 256)",
   "return F.relu(F.linear(x, w, torch.ones(w.shape[0])))",
   "return torch.addmm(torch.ones(w.shape[0]), x, w.t()).clamp_min(0)"),
 "var_unbiased": ("torch.randn(32, 1000) * 2 + 3",
   "return x.var(-1)",
   "d = x - x.mean(-1, keepdim=True)\n        return (d * d).sum(-1) / (x.shape[-1] - 1)"),
 "maxpool_unfold": ("torch.randn(2, 4, 16, 16)",
   "return F.max_pool2d(x, 2)",
   "n, c, h, w_ = x.shape\n        return x[:, :, :h // 2 * 2, :w_ // 2 * 2].reshape(n, c, h // 2, 2, w_ // 2, 2).amax((3, 5))"),
 "avgpool_conv": ("torch.randn(2, 4, 16, 16)",
   "return F.avg_pool2d(x, 3, stride=1, padding=1, count_include_pad=True)",
   "k = torch.full((x.shape[1], 1, 3, 3), 1.0 / 9.0)\n        return F.conv2d(x, k, padding=1, groups=x.shape[1])"),
 "embedding_gather": ("torch.randint(0, 1000, (64, 16)), torch.randn(1000, 128)",
   "return F.embedding(x, w)",
   "return w.index_select(0, x.reshape(-1)).view(*x.shape, w.shape[1])"),
 "scatter_add_bins": ("torch.randn(4096), torch.randint(0, 64, (4096,))",
   "return torch.zeros(64).index_add(0, w, x)",
   "return torch.zeros(64).scatter_add(0, w, x)"),
 "cosine_similarity": ("torch.randn(64, 256), torch.randn(64, 256)",
   "return F.cosine_similarity(x, w, dim=-1)",
   "return (x * w).sum(-1) / (x.norm(dim=-1) * w.norm(dim=-1)).clamp_min(1e-8)"),
 "smooth_l1": ("torch.randn(64, 256), torch.randn(64, 256)",
   "return F.smooth_l1_loss(x, w, reduction='none')",
   "d = (x - w).abs()\n        return torch.where(d < 1.0, 0.5 * d * d, d - 0.5)"),
 "hardswish": ("torch.randn(64, 256) * 4",
   "return F.hardswish(x)",
   "return x * (x + 3).clamp(0, 6) / 6"),
 "mish": ("torch.randn(64, 256) * 3",
   "return F.mish(x)",
   "return x * torch.tanh(F.softplus(x))"),
 "elu_exp_minus_one": ("torch.randn(64, 256)",
   "return F.elu(x)",
   "return torch.where(x > 0, x, torch.exp(x) - 1)"),
 "log1p_as_log": ("torch.rand(64, 256) * 10",
   "return torch.log1p(x)",
   "return torch.log(1 + x)"),
 "instance_norm": ("torch.randn(4, 8, 32, 32) * 2 + 1",
   "return F.instance_norm(x)",
   "f = x.flatten(2)\n        mu = f.mean(-1, keepdim=True)\n        var = f.var(-1, unbiased=False, keepdim=True)\n        return ((f - mu) / torch.sqrt(var + 1e-5)).view_as(x)"),
 "batch_norm_train": ("torch.randn(64, 32, 8, 8) + 2",
   "return F.batch_norm(x, None, None, training=True)",
   "mu = x.mean((0, 2, 3), keepdim=True)\n        var = ((x - mu) ** 2).mean((0, 2, 3), keepdim=True)\n        return (x - mu) * torch.rsqrt(var + 1e-5)"),
 "gqa_attention": ("torch.randn(2, 8, 64, 32), torch.randn(2, 2, 64, 32)",
   "k = w.repeat_interleave(4, dim=1)\n        return torch.softmax(x @ k.transpose(-1, -2) / 32 ** 0.5, -1) @ k",
   "b, h, t, d = x.shape\n        q = x.view(b, w.shape[1], h // w.shape[1], t, d)\n        s = q @ w[:, :, None].transpose(-1, -2) * d ** -0.5\n        return (torch.softmax(s, -1) @ w[:, :, None]).view(b, h, t, d)"),
 "masked_mean": ("torch.randn(32, 128), torch.rand(32, 128) > 0.3",
   "return (x * w).sum(-1) / w.sum(-1).clamp_min(1)",
   "return torch.where(w, x, 0.0).sum(-1) / w.float().sum(-1).clamp_min(1)"),
 "asym_uint8_quant": ("torch.rand(64, 512) * 6 - 1",
   "lo, hi = x.amin(1, keepdim=True), x.amax(1, keepdim=True)\n        s = (hi - lo) / 255\n        zp = torch.round(-lo / s)\n        q = torch.clamp(torch.round(x / s) + zp, 0, 255)\n        return (q - zp) * s",
   "lo, hi = x.amin(1, keepdim=True), x.amax(1, keepdim=True)\n        s = (hi - lo) / 255\n        inv = 1.0 / s\n        zp = torch.round(-lo * inv)\n        q = torch.clamp(torch.round(x * inv) + zp, 0, 255).to(torch.uint8)\n        return (q.float() - zp) * s"),
 "bf16_mean": ("torch.randn(64, 4096, dtype=torch.bfloat16)",
   "return x.mean(-1)",
   "return (x.float().sum(-1) / x.shape[-1]).to(x.dtype)"),
 "fp16_sum_fp32acc": ("torch.randn(64, 8192, dtype=torch.float16)",
   "return x.sum(-1)",
   "return x.float().sum(-1).half()"),
 "softmax_dim0": ("torch.randn(512, 64) * 5",
   "return torch.softmax(x, 0)",
   "e = torch.exp(x - x.amax(0, keepdim=True))\n        return e / e.sum(0, keepdim=True)"),
 "einsum_bmm": ("torch.randn(8, 64, 32), torch.randn(8, 32, 48)",
   "return torch.bmm(x, w)",
   "return torch.einsum('bik,bkj->bij', x, w)"),
 "topk_values": ("torch.randn(64, 1000)",
   "return torch.topk(x, 8, dim=-1).values",
   "return torch.sort(x, dim=-1, descending=True).values[:, :8]"),
 "logsigmoid": ("torch.randn(64, 256) * 20",
   "return F.logsigmoid(x)",
   "return -F.softplus(-x)"),
 "moe_top2": ("torch.randn(64, 32), torch.randn(32, 8)",
   "p = torch.softmax(x @ w, -1)\n        v, i = torch.topk(p, 2, -1)\n        v = v / v.sum(-1, keepdim=True)\n        experts = torch.stack([x * (e + 1) for e in range(8)], 1)\n        return (torch.gather(experts, 1, i[:, :, None].expand(-1, -1, 32)) * v[:, :, None]).sum(1)",
   "l = x @ w\n        v, i = torch.topk(l, 2, -1)\n        v = torch.softmax(v, -1)\n        out = torch.zeros_like(x)\n        for e in range(8):\n            m = (i == e)\n            out = out + (m.float() * v).sum(-1, keepdim=True) * (x * (e + 1))\n        return out"),
 "moe_top2_bf16": ("torch.randn(64, 32, dtype=torch.bfloat16), torch.randn(32, 8, dtype=torch.bfloat16)",
   "p = torch.softmax((x @ w).float(), -1)\n        v, i = torch.topk(p, 2, -1)\n        v = v / v.sum(-1, keepdim=True)\n        experts = torch.stack([x.float() * (e + 1) for e in range(8)], 1)\n        return (torch.gather(experts, 1, i[:, :, None].expand(-1, -1, 32)) * v[:, :, None]).sum(1)",
   "l = (x.float() @ w.float())\n        v, i = torch.topk(l, 2, -1)\n        v = torch.softmax(v, -1)\n        out = torch.zeros(x.shape, dtype=torch.float32)\n        for e in range(8):\n            m = (i == e)\n            out = out + (m.float() * v).sum(-1, keepdim=True) * (x.float() * (e + 1))\n        return out"),
 "bn_eval_folded": ("torch.randn(16, 64, 256) * 2 + 10",
   "m, v = torch.linspace(8, 12, 64), torch.linspace(1, 6, 64)\n        g, b = torch.linspace(0.5, 1.5, 64), torch.linspace(-1, 1, 64)\n        return F.batch_norm(x, m, v, g, b, False, 0.0, 1e-5)",
   "m, v = torch.linspace(8, 12, 64), torch.linspace(1, 6, 64)\n        g, b = torch.linspace(0.5, 1.5, 64), torch.linspace(-1, 1, 64)\n        a = g / torch.sqrt(v + 1e-5)\n        return x * a[:, None] + (b - m * a)[:, None]"),
 "cdist_direct": ("torch.randn(256, 64), torch.randn(300, 64)",
   "return torch.cdist(x, w)",
   "return ((x[:, None, :] - w[None, :, :]) ** 2).sum(-1).sqrt()"),
 "cdist_via_mm": ("torch.randn(256, 64), torch.randn(300, 64)",
   "return ((x[:, None, :] - w[None, :, :]) ** 2).sum(-1).sqrt()",
   "d = (x * x).sum(-1)[:, None] + (w * w).sum(-1)[None, :] - 2 * x @ w.t()\n        return d.clamp_min(0).sqrt()"),
 "frobenius_norm": ("torch.randn(64, 1024)",
   "return torch.linalg.vector_norm(x, dim=-1)",
   "return torch.sqrt((x * x).sum(-1))"),
 "huber_loss": ("torch.randn(64, 512), torch.randn(64, 512)",
   "return F.huber_loss(x, w, delta=1.0)",
   "d = (x - w).abs()\n        return torch.where(d < 1.0, 0.5 * d * d, d - 0.5).mean()"),
 "batched_gemv_mulsum": ("torch.randn(32, 256), torch.randn(32, 256, 128)",
   "return torch.bmm(x[:, None, :], w)[:, 0]",
   "return (x[:, :, None] * w).sum(1)"),
 "mean_two_dims": ("torch.randn(16, 64, 32, 32)",
   "return x.mean((2, 3))",
   "return x.sum(3).sum(2) / 1024"),
 "std_two_pass": ("torch.randn(64, 1000) * 4 + 2",
   "return x.std(-1)",
   "d = x - x.mean(-1, keepdim=True)\n        return torch.sqrt((d * d).sum(-1) / (x.shape[-1] - 1))"),
 "softmax_temperature": ("torch.randn(64, 1000)",
   "return torch.softmax(x / 0.7, -1)",
   "e = torch.exp((x - x.amax(-1, keepdim=True)) * (1 / 0.7))\n        return e / e.sum(-1, keepdim=True)"),
 "gelu_erf_fp16": ("torch.randn(64, 1024, dtype=torch.float16)",
   "return F.gelu(x)",
   "xf = x.float()\n        return (0.5 * xf * (1 + torch.erf(xf * 0.7071067811865476))).half()"),
 "argmin_negated": ("torch.randn(64, 1000)",
   "return x.argmin(-1)",
   "return (-x).argmax(-1)"),
}


def sources(inputs: str, reference: str, candidate: str) -> tuple[str, str]:
    """The problem and the candidate files: one input (x) or two (x, w)."""
    args = "x, w" if ("), torch." in inputs or ", torch.randint" in inputs) else "x"
    problem = (f"{HEADER}class Model(nn.Module):\n    def forward(self, {args}):\n"
               f"        {reference}\n\n\ndef get_inputs():\n    return [{inputs}]\n\n\n"
               f"def get_init_inputs():\n    return []\n")
    kernel = (f"{HEADER}class ModelNew(nn.Module):\n    def forward(self, {args}):\n"
              f"        {candidate}\n")
    return problem, kernel


def main(names: list[str]) -> None:
    for name in names or list(CASES):
        problem, kernel = sources(*CASES[name])
        folder = Path(tempfile.mkdtemp(prefix=f"honest-{name}-"))
        (folder / "1_Problem.py").write_text(problem)
        (folder / "candidate.py").write_text(kernel)
        start = time.perf_counter()
        verdict = judge_case(Case(name, folder / "1_Problem.py", folder / "candidate.py"),
                             RunConfig(native="kernelbench", gates=GATES), manager())
        statuses = " ".join(f"{g}={r.status.name[:4]}" for g, r in verdict.gates.items())
        print(f"{name}: {time.perf_counter() - start:.1f} s {statuses}", flush=True)
        for gate, result in verdict.gates.items():
            if result.status.name not in ("PASS", "SKIP"):
                print(f"    {gate} {result.status.name}: {result.detail[:220]}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
