"""Timings beside mamba_ssm's Mamba-3 kernels on a GPU, one call: the forward, the forward +
backward, and the decode step, at the paper's layer shapes (d_state K = 128,
headdim V = 64, 32 heads over 4 key heads, 32 angles), bf16. Needs MAMBA_SSM_SRC
(upstream.py). Checks ours against the float64 oracle at a small size first.

    MAMBA_SSM_SRC=<checkout> python -m kdiff.kernels.mamba3.bench --json out.json
"""
from __future__ import annotations

import argparse
import json

import torch
import triton.testing

from kdiff.kernels.mamba3.backward import mamba3_siso
from kdiff.kernels.mamba3.forward import mamba3_siso_forward, mamba3_siso_step
from kdiff.kernels.mamba3.problems import activations, sequence_inputs
from kdiff.kernels.mamba3.reference import States, mamba3_siso_recurrence
from kdiff.kernels.mamba3.upstream import mamba3_module

SEQUENCE_SHAPES = ((16, 2048), (4, 8192), (1, 16384))  # (B, T); the upstream tests' batch 16
DECODE_BATCHES = (128,)
HEADS_QK, HEADS_PER_QK, K, V = 4, 8, 128, 64


def flops_per_token_head(C: int = 64) -> int:
    """Forward: Q'K'^T and P V (2 C (K + V)), Q'S^T and the state step (4 K V)."""
    return 2 * C * (K + V) + 4 * K * V


def bytes_per_token_head(elem: int = 2) -> float:
    """Forward reads q, k (shared by the group), v, z and writes out in the working dtype;
    adt, dt (fp32), trap, and A = K / 4 fp32 angles."""
    return elem * (2 * K / HEADS_PER_QK + 3 * V + 1) + 4 * (2 + K // 4)


def inputs(B, T, dtype, heads=(HEADS_QK, HEADS_PER_QK, K, V)):
    """The layer's inputs on the GPU: `dtype` for q, k, v, trap, the biases and z, fp32 for
    the rest; `heads` = (key heads, heads per key head, K, V)."""
    torch.manual_seed(0)
    q, k, v, a, dt, trap, qb, kb, angles, D, z, *states = [
        x.cuda() for x in sequence_inputs(B, T, *heads)]
    q, k, adt, dt = activations(q, k, a, dt)
    f32 = [adt, dt, angles, D, *states]
    low = [x.to(dtype) for x in (q, k, v, trap, qb, kb, z)]
    return low, [x.float() for x in f32]


def decode_inputs(B, dtype):
    """The decode step's arguments at batch B, one token of `inputs`: (q, k, v, adt, dt,
    trap, q_bias, k_bias, angles, D, z) as mamba3_siso_step takes them, and the four states."""
    low, f32 = inputs(B, 1, dtype)
    q, k, v, trap, qb, kb, z = [x[:, 0] if x.dim() == 4 else x for x in low]
    adt, dt, angles, D, *states = f32
    return (q, k, v, adt[..., 0], dt[..., 0], trap[..., 0], qb, kb, angles[:, 0], D, z), states


def ours_forward(low, f32, chunk=None, block_v=None):
    q, k, v, trap, qb, kb, z = low
    adt, dt, angles, D, *states = f32
    return mamba3_siso_forward(q, k, v, adt, dt, trap, qb, kb, angles, D, z, States(*states),
                               chunk_size=chunk, block_v=block_v)


def theirs_forward(low, f32):
    combined = mamba3_module("mamba3_siso_combined").mamba3_siso_combined
    q, k, v, trap, qb, kb, z = low
    adt, dt, angles, D, *states = f32
    return combined(q, k, v, adt, dt, trap, qb, kb, angles, D, z, tuple(states),
                    chunk_size=64, return_final_states=True)


def check(dtype=torch.float32) -> float:
    low, f32 = inputs(2, 200, dtype)
    out, _ = ours_forward(low, f32)
    ref, _ = mamba3_siso_recurrence(*[x.double() for x in low[:3]], *[
        x.double() for x in (f32[0], f32[1], low[3], low[4], low[5], f32[2], f32[3], low[6])],
        States(*(s.double() for s in f32[4:])))
    return ((out.double() - ref).abs().max() / ref.abs().max()).item()


def record(rows: dict, key: str, value, path: str | None) -> None:
    """One row, printed and written as soon as it is measured: a call cut short at its
    budget keeps the rows before (mamba_ssm's autotuning compiles for minutes per shape)."""
    rows[key] = value
    print(key, json.dumps(value), flush=True)
    if path:
        with open(path, "w") as f:
            json.dump(rows, f, indent=1)


def once(fn) -> float:
    """--warm-only's stand-in for do_bench: one untimed call (NaN ms)."""
    fn()
    torch.cuda.synchronize()
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    parser.add_argument("--warm-only", action="store_true",
                        help="call each kernel once per shape, untimed: fills Triton's "
                             "compile cache (and runs mamba_ssm's autotuning) beside other work")
    args = parser.parse_args()
    timed = once if args.warm_only else triton.testing.do_bench
    rows: dict = {}
    record(rows, "check_fp32_relative_error", check(), args.json)
    step = mamba3_module("mamba3_siso_step").mamba3_siso_step
    for B in DECODE_BATCHES:
        a, states = decode_inputs(B, torch.bfloat16)
        record(rows, f"decode_{B}", {
            "ours_ms": timed(lambda a=a, s=states: mamba3_siso_step(*a, States(*s))),
            "mamba_ssm_ms": timed(lambda a=a, s=states: step(*a, tuple(s)))}, args.json)
    # Every forward before the first training step: mamba_ssm's backward autotunes for
    # minutes at each new shape, and a budget that ends inside it keeps the rows before.
    for B, T in SEQUENCE_SHAPES:
        low, f32 = inputs(B, T, torch.bfloat16)
        work = B * T * HEADS_QK * HEADS_PER_QK
        ours = timed(lambda low=low, f32=f32: ours_forward(low, f32))
        theirs = timed(lambda low=low, f32=f32: theirs_forward(low, f32))
        record(rows, f"{B}x{T}_fwd", {
            "ours_ms": ours, "mamba_ssm_ms": theirs,
            "ours_tflops": work * flops_per_token_head() / ours / 1e9,
            "ours_gbps": work * bytes_per_token_head() / ours / 1e6}, args.json)
    for B, T in SEQUENCE_SHAPES:
        low, f32 = inputs(B, T, torch.bfloat16)
        leaves = [x.detach().requires_grad_() for x in low + f32]

        def theirs_train(leaves=leaves):
            out = theirs_forward(leaves[:7], leaves[7:])
            torch.autograd.backward(out, [torch.ones_like(o) for o in out])

        def ours_train(leaves=leaves):
            q, k, v, trap, qb, kb, z, adt, dt, angles, D, *states = leaves
            out, final = mamba3_siso(q, k, v, adt, dt, trap, qb, kb, angles, D, z,
                                     States(*states))
            outs = [out, *final]
            torch.autograd.backward(outs, [torch.ones_like(o) for o in outs])
        # ours first, recorded on its own, for the same reason
        row = {"ours_ms": timed(ours_train)}
        record(rows, f"{B}x{T}_fwd_bwd", row, args.json)
        record(rows, f"{B}x{T}_fwd_bwd", {**row, "mamba_ssm_ms": timed(theirs_train)}, args.json)


if __name__ == "__main__":
    main()
