"""Chunked Gated DeltaNet (or KDA) on a GPU: correctness of the compiled kernels against the
float64 sequential oracle, then forward and forward+backward timings in bf16 at K = V = 128,
beside flash-linear-attention's chunk_gated_delta_rule (chunk_kda) when `fla` is importable.

    python benchmarks/gdn_bench.py [--shapes 4x2048x16,1x8192x96] [--skip-check]
    python benchmarks/gdn_bench.py --family kda [--shapes ...]   # KDA: per-channel gate, C = 64
    TRITON_INTERPRET=1 python benchmarks/gdn_bench.py --smoke   # CPU: the checks' code path only
    python benchmarks/gdn_bench.py --compile-report [--dtypes bf16,fp32]  # no GPU needed

Prints one table at the end and writes gdn_bench[_kda]_bv{BV}.json under $OUT when it is set. Each shape is
checked and timed in its own try/except, so one failure does not lose the rest. The FLOP
count is that of the chunked algorithm (kernels/gdn/NOTES.md), not of the recurrence.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import time
import traceback

# fla's FlashQLA (TileLang) backend would be picked on Hopper when its package is present:
# time fla's own pure Triton path, the one this kernel is compared with.
os.environ.setdefault("FLA_FLASH_QLA", "0")
os.environ.setdefault("FLA_TILELANG", "0")

import torch
import torch.nn.functional as F
import triton
from triton.testing import do_bench

from kdiff.kernels.gdn import chunk as gdn_chunk
from kdiff.kernels.gdn import chunk_gated_delta_rule, chunk_kda, gated_recurrence
from kdiff.kernels.gdn.chunk import fallback_flag
from kdiff.kernels.gdn.kda import KDA_CHUNK
from kdiff.numerics.tolerance import LAMBDA, unit_roundoff

SHAPES = [(4, 2048, 16), (1, 8192, 96), (2, 16384, 16), (4, 4096, 64)]
D = 128
CHUNK = 64
NAMES = ("o", "final_state", "dq", "dk", "dv", "dg", "dbeta", "dh0")

FLA_MISSING = ""
try:
    import fla.ops.common.chunk_o as fla_chunk_o
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule as fla_gdn
    # fla's Hopper guard bypassed, as for issue 7's reference figures: with Triton >= 3.4 and
    # < 3.7.1 on Hopper its gated chunk_bwd_dqkwg refuses to run ("produces incorrect
    # results", fla #640). The times are of the kernels as they run; kdiff's gates on fla
    # (benchmarks/fla_candidates) judge whether the results are wrong.
    fla_chunk_o.TRITON_ABOVE_3_7_1 = True
except Exception as exc:  # noqa: BLE001 - fla is optional
    fla_gdn = None
    FLA_MISSING = f"{type(exc).__name__}: {exc}"
try:
    from fla.ops.kda import chunk_kda as fla_kda
except Exception as exc:  # noqa: BLE001 - fla is optional
    fla_kda = None
    FLA_MISSING = FLA_MISSING or f"{type(exc).__name__}: {exc}"

# --fla-forward-only: fla's backward autotunes at every new shape (minutes on the H200 with
# Triton 3.6), more than a device session's budget allows beside everything else
FLA_FORWARD_ONLY = False
# Time the backward with P^T dO inside the scan too (--alt). Off by default: at (4, 2048, 16)
# on the H200 it raised an illegal memory access (at the narrowed scan width, which chunk.py
# no longer gives it: benchmarks/gdn_alt_probe.py), and an illegal access leaves the CUDA
# context unusable for the shapes after it.
TIME_ALT = False
TIME_FALLBACK = False  # --fallback
# "gdn" (scalar gate, chunks of CHUNK) or "kda" (per-channel gate, chunks of KDA_CHUNK):
# set once by --family before anything runs
FAMILY = "gdn"


def chunk_of(family: str) -> int:
    return KDA_CHUNK if family == "kda" else CHUNK


def flops(B: int, T: int, H: int, K: int, V: int, C: int | None = None,
          family: str | None = None) -> tuple[float, float]:
    """(forward, backward) FLOPs of the chunked algorithm, counted as full tiles (NOTES.md;
    KDA: its section there)."""
    family = family or FAMILY
    C = C or chunk_of(family)
    chunks = B * H * math.ceil(T / C)
    if family == "kda":
        # sub-chunks of BC: the [BC, BC, K] pair tensors (5 BC^2 K) recomputed by every V-block
        # program; off-diagonal blocks as masked full-tile products (off: C > BC)
        BC, off = 16, int(C > 16)
        fwd = (6 * C * K * V + 2 * C * C * V + (2 * C * BC + off * 2 * C * C) * V
               + (5 * C * BC + off * 2 * C * C) * K * (1 + V / 64) + 2 * C * C * K
               + (C // BC) * BC ** 3 / 3 + 2 * BC * C * C + off * 2 * C ** 3)
        scores = (12 * C * BC + off * 2 * C * C + C * (C - BC) + C * C * (C - BC) / BC) * K
        bwd = (12 * C * K * V + 6 * C * C * V + C * (C + BC) * V
               + (V / 64) * (5 * C * BC + C * (C - BC)) * K + 4 * C * C * K + 4 * C ** 3
               + 2 * scores)
    else:
        fwd = 6 * C * C * K + 4 * C * C * V + 6 * C * K * V + C ** 3 / 3
        bwd = 14 * C * C * K + 8 * C * C * V + 12 * C * K * V + 4 * C ** 3
    return chunks * fwd, chunks * bwd


def make_inputs(B, T, H, K, V, dtype, device, seed=0, requires_grad=False):
    """KDA (FAMILY "kda"): g per key channel [B, T, H, K], the same draws otherwise."""
    gen = torch.Generator(device="cpu").manual_seed(seed)
    q = torch.randn(B, T, H, K, generator=gen)
    k = F.normalize(torch.randn(B, T, H, K, generator=gen), dim=-1)
    v = torch.randn(B, T, H, V, generator=gen)
    gate_dims = (K,) if FAMILY == "kda" else ()
    g = F.logsigmoid(torch.randn(B, T, H, *gate_dims, generator=gen) + 2.0)
    beta = torch.rand(B, T, H, generator=gen)
    h0 = torch.randn(B, H, K, V, generator=gen)
    xs = [x.to(device=device, dtype=dtype) for x in (q, k, v, g, beta)] + [h0.to(device)]
    if requires_grad:
        xs = [x.requires_grad_() for x in xs]
    return xs


def fwd_bwd(fn, xs, dtype, cu_seqlens=None, seed=1):
    """Forward with the final state, backward with fixed cotangents: 8 tensors (on the CPU)."""
    xs = [x.detach().clone().requires_grad_() for x in xs]
    o, ht = fn(*xs[:5], initial_state=xs[5], output_final_state=True, cu_seqlens=cu_seqlens)
    gen = torch.Generator().manual_seed(seed)
    do = torch.randn(o.shape, generator=gen).to(o.device, dtype)
    dht = torch.randn(ht.shape, generator=gen).to(ht.device, ht.dtype)
    torch.autograd.backward([o, ht], [do, dht])
    return [t.detach().cpu() for t in [o, ht] + [x.grad for x in xs]]


def oracle_gdn(q, k, v, g, beta, initial_state, output_final_state, cu_seqlens=None):
    """The sequential oracle of either family (gated_recurrence reads the gate's rank)."""
    return gated_recurrence(q, k, v, g, beta, initial_state=initial_state, cu_seqlens=cu_seqlens)


def ours(q, k, v, g, beta, initial_state, output_final_state, cu_seqlens=None):
    if FAMILY == "kda":
        return chunk_kda(q, k, v, g, beta, initial_state=initial_state,
                         output_final_state=output_final_state, cu_seqlens=cu_seqlens)
    return chunk_gated_delta_rule(q, k, v, g, beta, initial_state=initial_state,
                                  output_final_state=output_final_state, cu_seqlens=cu_seqlens,
                                  chunk_size=CHUNK)


def fla_impl():
    return fla_kda if FAMILY == "kda" else fla_gdn


DEVICE = "cuda"


def gla_kernels(P: str, BK: int, GBV_S: int, GBV_P: int, GBT: int) -> list[tuple]:
    """GLA's kernels for the compile report at chunks of GBT (16 or 64; sub-chunks of 16),
    named with the chunk when it is 64."""
    from kdiff.kernels.gdn import gla
    i32, f32, name = "*i32", "*fp32", (lambda key: key if GBT == 16 else f"{key}{GBT}")
    BC = gla.SUB_CHUNK
    return [
        (gla.gla_state_fwd_kernel, name("gla_state_fwd"),
         dict(k=P, w=P, v=P, gc="*fp64", h0=f32, hbuf=P, vnew=P, ht=f32, cu_seqlens=i32,
              chunk_offsets=i32),
         dict(BT=GBT, BK=BK, BV=GBV_S, HAS_H0=True, STORE_FINAL=True, DELTA=False)),
        (gla.gla_output_fwd_kernel, name("gla_output_fwd"),
         dict(q=P, k=P, v=P, gc="*fp64", hbuf=P, o=P, bounds=i32, scale="fp32"),
         dict(BT=GBT, BK=BK, BV=GBV_P, BC=BC)),
        (gla.gla_local_dv_kernel, name("gla_local_dv"),
         dict(q=P, k=P, gc="*fp64", do=P, dv_local=f32, bounds=i32, scale="fp32"),
         dict(BT=GBT, BK=BK, BV=GBV_P, BC=BC)),
        (gla.gla_state_bwd_kernel, name("gla_state_bwd"),
         dict(q=P, k=P, w=P, gc="*fp64", do=P, dv_local=f32, dv=P, dht=f32, dh0=f32, dhbuf=P,
              cu_seqlens=i32, chunk_offsets=i32, scale="fp32"),
         dict(BT=GBT, BK=BK, BV=GBV_S, HAS_DHT=True, STORE_DH0=True, DELTA=False)),
        (gla.gla_grad_qk_kernel, name("gla_grad_qk"),
         dict(q=P, k=P, v=P, gc="*fp64", hbuf=P, dhbuf=P, do=P, dq_part=f32, dk_part=f32,
              dg_part=f32, dp_buf=f32, bounds=i32, scale="fp32"),
         dict(BT=GBT, BK=BK, BV=GBV_P)),
        (gla.gla_grad_scores_kernel, name("gla_grad_scores"),
         dict(q=P, k=P, gc="*fp64", dp_buf=f32, dq_part=f32, dk_part=f32, dq=P, dk=P, dg=f32,
              bounds=i32), dict(BT=GBT, BK=BK, BC=BC)),
    ]


def kda_kernels(P: str, BK: int, GBV_S: int, GBV_P: int, KBT: int) -> list[tuple]:
    """KDA's own kernels for the compile report at chunks of KBT (16 or 64), named with the
    chunk when it is 64: its WY stage, GLA's scans with the delta rule compiled in, and GLA's
    score VJP on L (q = beta k in fp32). The output, local dU and grad_qk kernels are GLA's
    (gla_kernels) with U in place of V."""
    from kdiff.kernels.gdn import gla, kda
    i32, f32, name = "*i32", "*fp32", (lambda key: key if KBT == 16 else f"{key}{KBT}")
    return [
        (kda.kda_wy_fwd_kernel, name("kda_wy_fwd"),
         dict(k=P, v=P, beta=P, gc="*fp64", A=f32, w=P, u=P, bounds=i32),
         dict(BT=KBT, BK=BK, BV=GBV_P, BC=gla.SUB_CHUNK)),
        (kda.kda_wy_bwd_kernel, name("kda_wy_bwd"),
         dict(k=P, v=P, beta=P, gc="*fp64", A=f32, hbuf=P, du=P, dk_part=f32, dg_part=f32,
              dk=f32, dv=P, dbeta=f32, dg=f32, dl=f32, bounds=i32),
         dict(BT=KBT, BK=BK, BV=GBV_P)),
        (gla.gla_grad_scores_kernel, name("kda_grad_l"),
         dict(q=f32, k=P, gc="*fp64", dp_buf=f32, dq_part=f32, dk_part=f32, dq=f32, dk=f32,
              dg=f32, bounds=i32), dict(BT=KBT, BK=BK, BC=gla.SUB_CHUNK)),
        (gla.gla_state_fwd_kernel, name("kda_state_fwd"),
         dict(k=P, w=P, v=P, gc="*fp64", h0=f32, hbuf=P, vnew=P, ht=f32, cu_seqlens=i32,
              chunk_offsets=i32),
         dict(BT=KBT, BK=BK, BV=GBV_S, HAS_H0=True, STORE_FINAL=True, DELTA=True)),
        (gla.gla_state_bwd_kernel, name("kda_state_bwd"),
         dict(q=P, k=P, w=P, gc="*fp64", do=P, dv_local=f32, dv=P, dht=f32, dh0=f32, dhbuf=P,
              cu_seqlens=i32, chunk_offsets=i32, scale="fp32"),
         dict(BT=KBT, BK=BK, BV=GBV_S, HAS_DHT=True, STORE_DH0=True, DELTA=True)),
    ]


def compile_report(dtypes: list[str], dim: int = D, target: tuple[int, int] = (90, 32),
                   only: str | None = None) -> list[dict]:
    """Compiles every kernel (only: those whose names contain one of its comma-separated parts) for sm_90 with the launch shapes chunk.py uses (bf16/fp16/fp32,
    K = V = 128, C = 64) and reads registers and stack (spill) bytes from the cubin with
    Triton's bundled cuobjdump. Needs no GPU."""
    import re
    import subprocess
    import tempfile

    from triton.backends.compiler import GPUTarget

    from kdiff.kernels.gdn import gla, kda, output, recurrent, state, wy
    i32 = "*i32"
    f32 = "*fp32"
    rows = []
    for dt in dtypes:
        P = "*" + dt
        BT, BK = CHUNK, dim
        SBV, SBV_B = gdn_chunk.block_v("state_fwd", dim), gdn_chunk.block_v("state_bwd", dim)
        BV_APPLY, BV_OUT = gdn_chunk.block_v("wy_apply", dim), gdn_chunk.block_v("output_fwd", dim)
        BV_DU, BV_QK = gdn_chunk.block_v("local_du", dim), gdn_chunk.block_v("grad_qk", dim)
        BV_WY = gdn_chunk.block_v("wy_bwd", dim)
        RBV = min(recurrent.BV_RECURRENT, dim)
        GBV_S, GBV_P = min(gla.STATE_BV, dim), min(gla.PARALLEL_BV, dim)
        kernels = [
            (wy.chunk_cumsum_kernel, "cumsum", dict(g=P, gc="*fp64", bounds=i32), dict(BT=BT, BH=16)),
            (wy.wy_inverse_kernel, "wy_inverse", dict(k=P, beta=P, gc="*fp64", A=P, bounds=i32),
             dict(BT=BT, BKS=gdn_chunk.block_k("wy_inverse", BK))),
            (wy.wy_apply_kernel, "wy_apply", dict(k=P, v=P, beta=P, gc="*fp64", A=P, w=P, u=P,
                                                  bounds=i32),
             dict(BT=BT, BK=gdn_chunk.block_k("wy_apply", BK), BV=BV_APPLY)),
            (state.state_fwd_kernel, "state_fwd",
             dict(k=P, w=P, u=P, gc="*fp64", h0=f32, hbuf=P, vnew=P, ht=f32, cu_seqlens=i32,
                  chunk_offsets=i32), dict(BT=BT, BK=BK, BV=SBV, HAS_H0=True, STORE_FINAL=True)),
            (output.output_fwd_kernel, "output_fwd",
             dict(q=P, k=P, vnew=P, gc="*fp64", hbuf=P, o=P, flags=f32, bounds=i32, scale="fp32"),
             dict(BT=BT, BK=gdn_chunk.block_k("output_fwd", BK), BV=BV_OUT)),
            (state.local_du_kernel, "local_du",
             dict(q=P, k=P, gc="*fp64", do=P, du_local=P, bounds=i32, scale="fp32"),
             dict(BT=BT, BK=BK, BV=BV_DU)),
            (state.state_bwd_kernel, "state_bwd",
             dict(q=P, k=P, w=P, gc="*fp64", do=P, du_local=P, du=P, dht=f32, dh0=f32, dhbuf=P,
                  cu_seqlens=i32, chunk_offsets=i32, scale="fp32"),
             dict(BT=BT, BK=BK, BV=SBV_B, HAS_DHT=True, STORE_DH0=True, DELTA=True,
                  LOCAL_GIVEN=gdn_chunk.SPLIT_LOCAL_DU)),
            (output.grad_qk_kernel, "grad_qk",
             dict(q=P, k=P, vnew=P, gc="*fp64", hbuf=P, dhbuf=P, do=P, dq=P, dk_part=f32,
                  dg_part=f32, flags=f32, bounds=i32, scale="fp32"),
             dict(BT=BT, BK=BK, BV=BV_QK)),
            (wy.wy_bwd_kernel, "wy_bwd",
             dict(k=P, v=P, beta=P, gc="*fp64", A=P, hbuf=P, du=P, dk_part=f32, dg_part=f32, dk=P,
                  dv=P, dbeta=P, dg=P, flags=f32, bounds=i32), dict(BT=BT, BK=BK, BV=BV_WY)),
            (recurrent.recurrent_fwd_kernel, "recurrent_fwd",
             dict(q=P, k=P, v=P, g=f32, beta=P, h0=f32, o=P, ht=f32, ckpt=f32, when=i32,
                  cu_seqlens=i32, chunk_offsets=i32, scale="fp32"),
             dict(BT=BT, BK=BK, BV=RBV, HAS_H0=True, STORE_O=True, STORE_FINAL=True,
                  STORE_CKPT=False, GATED=True, DELTA=True, PER_CHANNEL=False)),
            (recurrent.recurrent_bwd_kernel, "recurrent_bwd",
             dict(q=P, k=P, v=P, g=f32, beta=P, ckpt=f32, slots=f32, dstate=f32, do=P,
                  dht=f32, dq=P, dk=P, dv=P, dg=f32, dbeta=P, dh0=f32, when=i32,
                  cu_seqlens=i32, chunk_offsets=i32, scale="fp32"),
             dict(BT=BT, BK=BK, BV=RBV, HAS_DHT=True, STORE_DH0=True, GATED=True, DELTA=True,
                  PER_CHANNEL=False)),
        ] + [kernel for GBT in (16, 64) for kernel in gla_kernels(P, BK, GBV_S, GBV_P, GBT)] + [
            kernel for KBT in (16, 64) for kernel in kda_kernels(P, BK, GBV_S, GBV_P, KBT)]
        cuobjdump = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin",
                                 "cuobjdump")
        for kernel, key, types, consts in kernels:
            if only and not any(part in key for part in only.split(",")):
                continue
            fn = getattr(kernel, "aligned", kernel)  # every size here is a multiple of 16
            signature = {n: "constexpr" if n in consts else types.get(n, "i32")
                         for n in fn.arg_names}
            # the JIT marks integer and pointer arguments divisible by 16 (true of every size
            # here): the compile must see the same hints to vectorise the same way
            attrs = {(i,): [["tt.divisibility", 16]] for i, n in enumerate(fn.arg_names)
                     if signature[n] not in ("constexpr", "fp32")}
            torch_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dt]
            if key in gdn_chunk.WARPS:
                options = gdn_chunk.launch(key, torch_dtype)
            else:
                # KDA runs GLA's scans, and GLA's score VJP for L
                family_key = key.replace("kda_grad_l", "gla_grad_scores")
                gla_key = family_key.removesuffix("64")
                if gla_key in gla.WARPS:
                    options = gla.launch(gla_key, 64 if key.endswith("64") else 16, torch_dtype)
                else:
                    options = {"num_warps": kda.WARPS.get(gla_key) or
                               recurrent.WARPS_RECURRENT.get(key, 4)}
            warps = options["num_warps"]
            started = time.time()
            row = {"dtype": dt, "kernel": key, "warps": warps}
            try:
                src = triton.compiler.ASTSource(fn=fn, signature=signature, constexprs=consts,
                                                attrs=attrs)
                compiled = triton.compile(src, target=GPUTarget("cuda", *target),
                                          options=options)
                row["shared"] = compiled.metadata.shared
                with tempfile.NamedTemporaryFile(suffix=".cubin") as fh:
                    fh.write(compiled.asm["cubin"])
                    fh.flush()
                    usage = subprocess.run([cuobjdump, "-res-usage", fh.name],
                                           capture_output=True, text=True).stdout
                for name, field in (("regs", "REG"), ("stack", "STACK")):
                    found = re.search(field + r":(\d+)", usage)
                    row[name] = int(found.group(1)) if found else None
            except Exception as exc:  # noqa: BLE001
                row["error"] = f"{type(exc).__name__}: {str(exc)[-600:]}"
            row["seconds"] = round(time.time() - started, 1)
            print(f"  sm_{target[0]} {dt:5s} {key:11s} warps={warps} shared={row.get('shared')} "
                  f"regs={row.get('regs')} stack={row.get('stack')} {row['seconds']}s"
                  + (f" ERROR {row['error']}" if "error" in row else ""), flush=True)
            rows.append(row)
    return rows


def current_launch(kernel: str, few: bool) -> dict:
    """A kernel's launch setting in chunk.py's tables (warps, stages, bv, bk), or its
    FEW_PROGRAMS_SCAN entry where `few`."""
    if few:
        return dict(gdn_chunk.FEW_PROGRAMS_SCAN[kernel])
    setting = {"warps": gdn_chunk.WARPS[kernel], "stages": gdn_chunk.STAGES.get(kernel)}
    if kernel in gdn_chunk.BLOCK_V:
        setting["bv"] = gdn_chunk.BLOCK_V[kernel]
    if kernel in gdn_chunk.BLOCK_K:
        setting["bk"] = gdn_chunk.BLOCK_K[kernel]
    return setting


def apply_launch(kernel: str, setting: dict, few: bool) -> None:
    """Writes a current_launch-style setting into chunk.py's tables for this process."""
    if few:
        gdn_chunk.FEW_PROGRAMS_SCAN[kernel] = dict(setting)
        return
    gdn_chunk.WARPS[kernel] = setting["warps"]
    if setting.get("stages") is None:
        gdn_chunk.STAGES.pop(kernel, None)
    else:
        gdn_chunk.STAGES[kernel] = setting["stages"]
    if "bv" in setting:
        gdn_chunk.BLOCK_V[kernel] = setting["bv"]
    if "bk" in setting:
        gdn_chunk.BLOCK_K[kernel] = setting["bk"]


def load_launch(path: str) -> None:
    """Applies the settings a `gdn_profile.py --sweep` chose (its gdn_chosen.json)."""
    with open(path) as fh:
        chosen = json.load(fh)
    for kernel, entry in chosen.items():
        setting = {k: entry[k] for k in ("warps", "stages", "bv", "bk") if k in entry}
        apply_launch(kernel, setting, entry["few_programs"])
        print(f"launch setting from {path}: {kernel} {setting}")


def check(label, B, T, H, K, V, dtype, lengths=None, token_by_token=False):
    """Relative normwise errors of the kernel and of the sequential reference run in the
    working precision, both against float64; bound LAMBDA u sqrt(N) (probabilistic model,
    N = (ceil(T/C) + 1)(K + V + 4C), derivation in tests/test_gdn.py). token_by_token: the
    call forced onto the token-by-token path (recurrent.py), N = 8 T + K V (the same
    derivation)."""
    xs = make_inputs(B, T, H, K, V, dtype, DEVICE, seed=T)
    cu = None
    if lengths is not None:
        cu = torch.tensor([0] + list(torch.tensor(lengths).cumsum(0).tolist()), device=DEVICE)
        xs[5] = xs[5][:1].expand(len(lengths), -1, -1, -1).contiguous()
    with chunk_setting("fallback_flag", always_flagged if token_by_token else fallback_flag):
        got = fwd_bwd(ours, xs, dtype, cu)
    exact = fwd_bwd(oracle_gdn, [x.detach().cpu().double() for x in xs], torch.float64,
                    None if cu is None else cu.cpu())
    same_precision = fwd_bwd(oracle_gdn, xs, dtype, cu)
    seq = max(lengths) if lengths else T
    C = chunk_of(FAMILY)
    N = 8 * seq + K * V if token_by_token else (math.ceil(seq / C) + 1) * (K + V + 4 * C)
    bound = LAMBDA * unit_roundoff(dtype) * math.sqrt(N)
    rows, ok = [], True
    for name, a, b, r in zip(NAMES, got, exact, same_precision):
        scale = b.abs().max().item() or 1.0
        err = (a.double() - b).abs().max().item() / scale
        ref_err = (r.double() - b).abs().max().item() / scale
        finite = bool(torch.isfinite(a).all())
        ok &= finite and err <= bound
        rows.append(f"{name}={err:.1e}(ref {ref_err:.1e})")
    print(f"  check {label:28s} {'PASS' if ok else 'FAIL'} bound {bound:.1e}: " + " ".join(rows))
    return {"label": label, "pass": ok, "bound": bound, "errors": rows}


def prefix_check(xs, o, tokens=128, heads=2):
    """The output at token t depends only on tokens <= t: the first `tokens` outputs of a
    large shape are checked against the float64 oracle run on that prefix (2 heads)."""
    part = [x[:1, :tokens, :heads].detach().cpu().double() for x in xs[:5]]
    h0 = xs[5][:1, :heads].detach().cpu().double()
    ref, _ = gated_recurrence(*part, initial_state=h0)
    got = o[:1, :tokens, :heads].detach().cpu().double()
    return (got - ref).abs().max().item() / ref.abs().max().item()


def calls(fn, xs, do):
    """The two timed calls of one implementation on fixed inputs xs (the last one the initial
    state): a forward without autograd, and a forward+backward with cotangent do that resets
    the input gradients first."""
    def forward():
        with torch.no_grad():
            fn(*xs[:5], initial_state=xs[5], output_final_state=True)

    def forward_backward():
        for x in xs:
            x.grad = None
        out, _ = fn(*xs[:5], initial_state=xs[5], output_final_state=True)
        out.backward(do)

    return forward, forward_backward


def always_flagged(*tensors):
    """chunk.fallback_flag answering 1: the token-by-token path on every call."""
    return torch.ones(1, dtype=torch.int32, device=DEVICE)


@contextlib.contextmanager
def chunk_setting(name, value):
    """kdiff.kernels.gdn.chunk's `name` set to value for the duration."""
    default = getattr(gdn_chunk, name)
    setattr(gdn_chunk, name, value)
    try:
        yield
    finally:
        setattr(gdn_chunk, name, default)


def timed_with(name, value, call, xs) -> float:
    """do_bench's median of call with chunk_setting(name, value)."""
    with chunk_setting(name, value):
        return do_bench(call, warmup=25, rep=200, grad_to_none=xs, return_mode="median")


def peak_memory_gb(call, xs) -> float:
    """The most memory one call allocates (GB) above what is allocated before it, the
    inputs and their cleared gradients: activations, saved tensors, scratch and gradients."""
    for x in xs:
        x.grad = None
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    call()
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - before) / 1e9


def time_shape(B, T, H):
    flop_f, flop_b = flops(B, T, H, D, D)
    row = {"shape": [B, T, H], "gflop_fwd": flop_f / 1e9, "gflop_fwd_bwd": (flop_f + flop_b) / 1e9}
    fla = fla_impl()
    impls = [("ours", ours)] + ([("fla", fla)] if fla is not None else [])
    outputs = {}
    for name, fn in impls:
        try:
            xs = make_inputs(B, T, H, D, D, torch.bfloat16, "cuda", requires_grad=True)
            with torch.no_grad():
                o, ht = fn(*xs[:5], initial_state=xs[5], output_final_state=True)
            torch.cuda.synchronize()
            finite = bool(torch.isfinite(o).all() and torch.isfinite(ht).all())
            row[f"{name}_prefix_err"] = prefix_check(xs, o)
            row[f"{name}_finite"] = finite
            outputs[name] = o.float()
            forward, forward_backward = calls(fn, xs, torch.randn_like(o))
            row[f"{name}_fwd_ms"] = do_bench(forward, warmup=25, rep=200, return_mode="median")
            if name == "fla" and FLA_FORWARD_ONLY:
                continue
            row[f"{name}_fwd_bwd_ms"] = do_bench(forward_backward, warmup=25, rep=200,
                                                 grad_to_none=xs, return_mode="median")
            row[f"{name}_fwd_bwd_peak_gb"] = peak_memory_gb(forward_backward, xs)
            if name == "ours" and FAMILY == "gdn" and TIME_ALT:  # P^T dO's other place (chunk.py)
                row["ours_alt_fwd_bwd_ms"] = timed_with("SPLIT_LOCAL_DU", False,
                                                        forward_backward, xs)
            if name == "ours" and TIME_FALLBACK:  # what a call with a NaN or an Inf costs
                row["ours_fallback_fwd_bwd_ms"] = timed_with("fallback_flag", always_flagged,
                                                             forward_backward, xs)
            row[f"{name}_fwd_tflops"] = flop_f / row[f"{name}_fwd_ms"] / 1e9
            row[f"{name}_fwd_bwd_tflops"] = (flop_f + flop_b) / row[f"{name}_fwd_bwd_ms"] / 1e9
        except Exception as exc:  # noqa: BLE001 - keep the other shapes
            row[f"{name}_error"] = f"{type(exc).__name__}: {exc}"
            traceback.print_exc()
        torch.cuda.empty_cache()
    if "ours" in outputs and "fla" in outputs:
        a, b = outputs["ours"], outputs["fla"]
        row["ours_vs_fla_rel"] = ((a - b).abs().max() / b.abs().max()).item()
    return row


TABLE_HEADER = (f"{'B,T,H':>13} | {'ours fwd':>8} {'f+b':>7} {'alt f+b':>7} {'TF/s':>5} "
                f"{'TF/s':>5} | {'fla fwd':>7} {'f+b':>7} | {'x fwd':>5} {'x f+b':>5} | "
                f"prefix err  vs fla  f+b peak GB")


def table_row(r: dict) -> str:
    of, ob = r.get("ours_fwd_ms"), r.get("ours_fwd_bwd_ms")
    ff, fb = r.get("fla_fwd_ms"), r.get("fla_fwd_bwd_ms")
    return (f"{','.join(map(str, r['shape'])):>13} | {fmt(of):>8} {fmt(ob):>7} "
            f"{fmt(r.get('ours_alt_fwd_bwd_ms')):>7} {fmt(r.get('ours_fwd_tflops'), '.0f'):>5} "
            f"{fmt(r.get('ours_fwd_bwd_tflops'), '.0f'):>5} | {fmt(ff):>7} {fmt(fb):>7} | "
            f"{fmt(ff / of if ff and of else None, '.2f'):>5} "
            f"{fmt(fb / ob if fb and ob else None, '.2f'):>5} | "
            f"{fmt(r.get('ours_prefix_err'), '.1e'):>9}  {fmt(r.get('ours_vs_fla_rel'), '.1e')}"
            f"  {fmt(r.get('ours_fwd_bwd_peak_gb'), '.2f')}/{fmt(r.get('fla_fwd_bwd_peak_gb'), '.2f')}"
            + (f"  token-by-token f+b {fmt(r['ours_fallback_fwd_bwd_ms'])}"
               if "ours_fallback_fwd_bwd_ms" in r else "")
            + (f"  ERROR {r['ours_error']}" if "ours_error" in r else ""))


def fmt(x, spec=".3f"):
    return "-" if x is None else format(x, spec)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", choices=("gdn", "kda"), default="gdn",
                    help="gdn: Gated DeltaNet (chunks of 64); kda: KDA, per-channel gate with "
                         "the delta rule (chunks of 64), beside fla's chunk_kda")
    ap.add_argument("--shapes", default=None, help="BxTxH,... (default: the four issue shapes)")
    ap.add_argument("--skip-check", action="store_true")
    ap.add_argument("--smoke", action="store_true",
                    help="CPU (TRITON_INTERPRET=1): tiny fp32 checks, no timing")
    ap.add_argument("--compile-report", action="store_true",
                    help="compile every kernel for sm_90 here (no GPU) and print regs/spills")
    ap.add_argument("--dtypes", default="bf16", help="for --compile-report: bf16,fp16,fp32")
    ap.add_argument("--dim", type=int, default=D, help="for --compile-report: K = V")
    ap.add_argument("--kernels", default=None,
                    help="for --compile-report: only kernels whose names contain one of these")
    ap.add_argument("--state-bv", type=int, default=None,
                    help="V-block of the state scans (chunk.BLOCK_V, default 64) for the whole "
                         "run: checks, timings and --compile-report")
    ap.add_argument("--state-fwd-warps", type=int, default=None,
                    help="warps of the forward state scan (default 4); with --state-bv 64 the "
                         "sm_90 compile needs 8 to stay at 194 registers without spilling")
    ap.add_argument("--launch", default=None,
                    help="a gdn_chosen.json written by `gdn_profile.py --sweep`: run with the "
                         "launch settings it chose")
    ap.add_argument("--fla-forward-only", action="store_true",
                    help="time fla's forward only (its backward's autotuning takes minutes)")
    ap.add_argument("--alt", action="store_true",
                    help="also time the backward with P^T dO inside the scan (alt f+b)")
    ap.add_argument("--fallback", action="store_true",
                    help="also time the forward+backward forced onto the token-by-token path "
                         "(what a call whose result holds a NaN or an Inf costs)")
    args = ap.parse_args()
    global FAMILY, FLA_FORWARD_ONLY, TIME_ALT, TIME_FALLBACK
    FAMILY = args.family
    FLA_FORWARD_ONLY = args.fla_forward_only
    TIME_ALT = args.alt
    TIME_FALLBACK = args.fallback
    if args.state_bv is not None:
        gdn_chunk.BLOCK_V.update(state_fwd=args.state_bv, state_bwd=args.state_bv)
    if args.state_fwd_warps is not None:
        gdn_chunk.WARPS["state_fwd"] = args.state_fwd_warps
    if args.launch:
        load_launch(args.launch)
    if args.compile_report:
        rows = compile_report(args.dtypes.split(","), args.dim, only=args.kernels)
        return 1 if any("error" in r for r in rows) else 0
    if args.smoke:
        global DEVICE
        DEVICE = "cpu"
        ok = [check("fp32 smoke B1 T20 H1 D16", 1, 20, 1, 16, 16, torch.float32)["pass"],
              check("fp32 smoke varlen 5+15", 1, 20, 1, 16, 16, torch.float32, [5, 15])["pass"],
              # V = 128: two or four state-scan blocks (--state-bv 64 or the default 32)
              check("fp32 smoke B1 T20 H1 K16 V128", 1, 20, 1, 16, 128, torch.float32)["pass"],
              check("fp32 smoke token-by-token V48", 1, 20, 1, 16, 48, torch.float32,
                    token_by_token=True)["pass"]]
        print(f"{FAMILY} flops(4,2048,16): fwd {flops(4, 2048, 16, D, D)[0] / 1e9:.1f} GFLOP")
        return 0 if all(ok) else 1
    if not torch.cuda.is_available():
        print("no CUDA device: this benchmark needs a GPU")
        return 2
    shapes = SHAPES if args.shapes is None else [
        tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",")]
    print(f"{FAMILY}: torch {torch.__version__} triton {triton.__version__} "
          f"{torch.cuda.get_device_name()} fla: {'yes' if fla_impl() else FLA_MISSING} "
          f"V-blocks {gdn_chunk.BLOCK_V}, forward warps {gdn_chunk.WARPS['state_fwd']}")
    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "triton": triton.__version__, "fla": fla_impl() is not None, "family": FAMILY,
              "checks": [], "shapes": [],
              "block_v": gdn_chunk.BLOCK_V, "state_fwd_warps": gdn_chunk.WARPS["state_fwd"]}
    out = os.environ.get("OUT")

    def save():  # after every step: a run cut short by its time limit keeps what it measured
        if out:
            family = "" if FAMILY == "gdn" else f"_{FAMILY}"  # BV: runs side by side keep both
            name = f"gdn_bench{family}_bv{gdn_chunk.BLOCK_V['state_fwd']}.json"
            with open(os.path.join(out, name), "w") as fh:
                json.dump(report, fh, indent=1)

    def run_check(label, dtype, **kw):
        try:
            report["checks"].append(check(label, dtype=dtype, **kw))
        except Exception as exc:  # noqa: BLE001
            traceback.print_exc()
            report["checks"].append({"label": label, "pass": False,
                                     "error": f"{type(exc).__name__}: {exc}"})
        save()

    started = time.time()
    # bf16 first: its kernels are the ones timed (checked against the oracle before timing)
    if not args.skip_check:
        run_check("bf16 B2 T100 H2 D128", torch.bfloat16, B=2, T=100, H=2, K=D, V=D)
    for B, T, H in shapes:
        print(f"  timing B={B} T={T} H={H} ...", flush=True)
        report["shapes"].append(time_shape(B, T, H))
        print("   ", table_row(report["shapes"][-1]), flush=True)
        save()
    if not args.skip_check:
        run_check("fp16 B2 T100 H2 D128", torch.float16, B=2, T=100, H=2, K=D, V=D)
        # fp32 at D = 64: IEEE fp32 tiles compile slowly (FMA code) and the check needs no
        # larger tiles; the varlen check reuses the same compiled kernels
        run_check("fp32 B2 T100 H2 D64", torch.float32, B=2, T=100, H=2, K=64, V=64)
        run_check("fp32 varlen 37+90+1 H2 D64", torch.float32, B=1, T=128, H=2, K=64, V=64,
                  lengths=[37, 90, 1])
    if args.fallback and not args.skip_check:  # the path every timing above launched, gated
        run_check("bf16 token-by-token D128", torch.bfloat16, B=2, T=100, H=2, K=D, V=D,
                  token_by_token=True)
        run_check("fp32 token-by-token varlen D64", torch.float32, B=1, T=128, H=2, K=64,
                  V=64, lengths=[37, 90, 1], token_by_token=True)
    print(f"  took {time.time() - started:.0f}s (compilation included)")
    print()
    print(TABLE_HEADER)
    for r in report["shapes"]:
        print(table_row(r))
    print("(ms: do_bench medians; alt f+b: P^T dO inside the backward scan instead of its own "
          "kernel (chunk.SPLIT_LOCAL_DU flipped); x = fla time / ours, > 1 means faster than fla; "
          "prefix err: first 128 outputs vs float64, normwise relative)")
    for c in report["checks"]:
        print(f"check {c['label']}: {'PASS' if c.get('pass') else 'FAIL'}")
    failed = [c for c in report["checks"] if not c.get("pass")]
    return 1 if failed or any("ours_error" in r for r in report["shapes"]) else 0


if __name__ == "__main__":
    sys.exit(main())
