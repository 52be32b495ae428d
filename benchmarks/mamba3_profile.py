"""Where kernels/mamba3's time goes on a GPU: the first call at each of a few problem sizes
(Triton's compilation, the cost a judge pays per held-out size) against the second, then
torch.profiler's kernel table for the forward, the forward + backward and the decode step
at the paper's shapes (kernels/mamba3/bench.py's). The decode step is also timed as a bare
launch of its kernel over a few block and warp settings, beside the whole call and
mamba_ssm's step (needs MAMBA_SSM_SRC for that row): the host's share against the kernel's.

    python benchmarks/mamba3_profile.py [--rows 12] [--parts first_call,sequence,decode]
    python benchmarks/mamba3_profile.py --parts forward_sweep    # the chunk kernel's launch
    python benchmarks/mamba3_profile.py --parts phase_rotation_sweep  # the other two kernels'
    python benchmarks/mamba3_profile.py --parts phase_parts    # the phases' fp64 work
    python benchmarks/mamba3_profile.py --parts baseline       # ours, then mamba_ssm's
    python benchmarks/mamba3_profile.py --parts backward_sweep # the backward kernels' warps
    python benchmarks/mamba3_profile.py --parts train_shapes   # forward + backward, 3 shapes
    python benchmarks/mamba3_profile.py --parts state_block_sweep  # the walks' V-blocks, 3 shapes
    python benchmarks/mamba3_profile.py --parts forward_walks  # inference and training forwards
"""
from __future__ import annotations

import argparse
import time

import torch
import triton
import triton.language as tl
import triton.testing
from torch.profiler import ProfilerActivity, profile

from kdiff.kernels.mamba3 import backward, bench, forward
from kdiff.kernels.mamba3.backward import mamba3_siso
from kdiff.kernels.mamba3.forward import mamba3_siso_step, new_states
from kdiff.kernels.mamba3.ops import mod_two_pi, mod_two_pi_near, phase_step
from kdiff.kernels.mamba3.recurrent import recurrent_forward
from kdiff.kernels.mamba3.reference import States
from kdiff.kernels.mamba3.upstream import mamba3_module

# (B, T, key heads, heads per key head, K, V): problem 1's size and sizes like CMP-03's
FIRST_CALL_SIZES = ((1, 24, 1, 2, 16, 16), (1, 24, 1, 2, 16, 16), (1, 17, 1, 2, 16, 16),
                    (1, 24, 1, 2, 34, 16), (1, 24, 1, 2, 16, 17), (3, 127, 1, 3, 16, 16))


def seconds(fn) -> float:
    torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return time.perf_counter() - start


def train_step(low, f32):
    leaves = [x.detach().requires_grad_() for x in low + f32]
    q, k, v, trap, qb, kb, z, adt, dt, angles, D, *states = leaves
    out, final = mamba3_siso(q, k, v, adt, dt, trap, qb, kb, angles, D, z, States(*states))
    outs = [out, *final]
    torch.autograd.backward(outs, [torch.ones_like(o) for o in outs])


def kernel_table(name: str, fn, rows: int) -> None:
    fn()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    print(name)
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=rows), flush=True)


def decode(rows: int, batch: int = 128) -> None:
    """The decode step at `batch`: the whole call, bare launches of its kernel (outputs
    allocated once) over block and warp settings, and mamba_ssm's step."""
    step, states = bench.decode_inputs(batch, torch.bfloat16)
    whole = lambda: mamba3_siso_step(*step, States(*states))  # noqa: E731
    print(f"decode B{batch}: the whole call {triton.testing.do_bench(whole):.4f} ms", flush=True)
    kernel_table(f"decode B{batch}, ours", whole, rows)
    # recurrent_forward's layout: a sequence of one token
    q, k, v, adt, dt, trap, qb, kb, angles, D, z = step
    args = [q.unsqueeze(1), k.unsqueeze(1), v.unsqueeze(1), adt.unsqueeze(-1), dt.unsqueeze(-1),
            trap.unsqueeze(-1), qb, kb, angles.unsqueeze(1), D, z.unsqueeze(1)]
    out, final = torch.empty_like(args[2]), new_states(States(*states), q.dtype)
    for block_v in (16, 32, 64):
        for warps in (1, 2, 4, 8):
            ms = triton.testing.do_bench(lambda bv=block_v, w=warps: recurrent_forward(
                *args, States(*states), out, final, block_v=bv, num_warps=w))
            print(f"decode B{batch} bare launch BV {block_v} warps {warps}: {ms:.4f} ms",
                  flush=True)
    try:
        theirs = mamba3_module("mamba3_siso_step").mamba3_siso_step
    except (ImportError, OSError) as err:
        print(f"mamba_ssm's step not timed: {err}")
        return
    other = lambda: theirs(*step, tuple(states))  # noqa: E731
    print(f"decode B{batch}: mamba_ssm's call {triton.testing.do_bench(other):.4f} ms",
          flush=True)
    kernel_table(f"decode B{batch}, mamba_ssm", other, rows)


def first_calls() -> None:
    for dtype in (torch.float32, torch.bfloat16):
        for B, T, Hq, G, K, V in FIRST_CALL_SIZES:
            low, f32 = bench.inputs(B, T, dtype, (Hq, G, K, V))
            fwd = seconds(lambda low=low, f32=f32: bench.ours_forward(low, f32))
            bwd = seconds(lambda low=low, f32=f32: train_step(low, f32))
            print(f"first call {dtype} B{B} T{T} H{Hq}x{G} K{K} V{V}: forward {fwd:.2f} s, "
                  f"forward + backward {bwd:.2f} s", flush=True)


def sequence(rows: int) -> None:
    low, f32 = bench.inputs(16, 2048, torch.bfloat16)
    kernel_table("forward 16x2048", lambda: bench.ours_forward(low, f32), rows)
    kernel_table("forward + backward 16x2048", lambda: train_step(low, f32), rows)


def backward_sweep(rows: int) -> None:
    """The forward + backward at 16 x 2048 (bf16), timed whole, over the launch settings of
    the training forward's states walk ("train") and output kernel ("output"), the
    backward's chunk kernels ("backward") and state_bwd_kernel ("state") in forward.WARPS and
    forward.STAGES, one changed at a time, then the kernel table as set."""
    low, f32 = bench.inputs(16, 2048, torch.bfloat16)
    sweep = ((forward.WARPS, "train", (4, 8)), (forward.WARPS, "output", (4, 8)),
             (forward.WARPS, "backward", (4, 8)),
             (forward.WARPS, "state", (4, 8)), (forward.STAGES, "state", (1, 2, 3)))
    for table, kernel, values in sweep:
        kept = table[kernel]["low"]
        for value in values:
            table[kernel]["low"] = value
            ms = triton.testing.do_bench(lambda: train_step(low, f32), rep=300)
            what = "warps" if table is forward.WARPS else "stages"
            print(f"forward + backward, {kernel} {value} {what}: {ms:.3f} ms", flush=True)
        table[kernel]["low"] = kept
    kernel_table("forward + backward 16x2048", lambda: train_step(low, f32), rows)


def train_shapes() -> None:
    """The forward + backward (bf16), timed whole, at bench.py's sequence shapes: from 16
    sequences of 2048 to one of 16384, where the grid's parallelism moves from the heads and
    sequences to the chunks."""
    for B, T in bench.SEQUENCE_SHAPES:
        low, f32 = bench.inputs(B, T, torch.bfloat16)
        ms = triton.testing.do_bench(lambda low=low, f32=f32: train_step(low, f32), rep=300)
        print(f"forward + backward {B}x{T}: {ms:.3f} ms", flush=True)


def state_block_sweep() -> None:
    """At bench.py's sequence shapes (bf16), where fewer sequences leave the sequential walks
    fewer programs: the forward, timed whole, over chunk_fwd_kernel's V-block (64, 32, 16),
    then the forward + backward over state_bwd_kernel's rows a program
    (backward.STATE_BLOCK_V: all of V, 32, 16)."""
    kept = backward.STATE_BLOCK_V
    for B, T in bench.SEQUENCE_SHAPES:
        low, f32 = bench.inputs(B, T, torch.bfloat16)
        for block_v in (64, 32, 16):
            ms = triton.testing.do_bench(lambda low=low, f32=f32, bv=block_v: bench.ours_forward(
                low, f32, block_v=bv))
            print(f"forward {B}x{T}, V-block {block_v}: {ms:.4f} ms", flush=True)
        for rows in (None, 32, 16):
            backward.STATE_BLOCK_V = rows
            ms = triton.testing.do_bench(lambda low=low, f32=f32: train_step(low, f32), rep=300)
            print(f"forward + backward {B}x{T}, state rows {rows or 'all'}: {ms:.3f} ms",
                  flush=True)
    backward.STATE_BLOCK_V = kept


def forward_walks() -> None:
    """At bench.py's sequence shapes (bf16), the forward timed whole in its forms: one walk
    forming each chunk's output (chunk_fwd_kernel), the states' walk and then every chunk's
    output at once, and the latter with the buffers the backward reads (the training
    step's); and which of the first two the inference forward takes (forward.walks_once)."""
    rule = forward.walks_once
    for B, T in bench.SEQUENCE_SHAPES:
        low, f32 = bench.inputs(B, T, torch.bfloat16)
        q, k, v, trap, qb, kb, z = low
        adt, dt, angles, D, *states = f32
        args = (q, k, v, adt, dt, trap, qb, kb, angles, D, z, States(*states))
        once = rule(B * v.shape[2], v.shape[3], v.device)
        for form, walk, store in (("one walk", True, False), ("two kernels", False, False),
                                  ("training", False, True)):
            forward.walks_once = lambda *_, w=walk: w
            ms = triton.testing.do_bench(
                lambda a=args, s=store: forward.mamba3_siso_forward(*a, store=s))
            taken = " (the inference rule's)" if not store and walk == once else ""
            print(f"forward {B}x{T}, {form}{taken}: {ms:.4f} ms", flush=True)
        forward.walks_once = rule


def forward_sweep(rows: int) -> None:
    """The forward at 16 x 2048 (bf16) over the chunk kernel's launch settings (chunk size,
    V-block, warps), each the whole call timed, beside mamba_ssm's forward."""
    low, f32 = bench.inputs(16, 2048, torch.bfloat16)
    saved = dict(forward.WARPS["forward"]), dict(forward.STAGES["forward"])
    for chunk in (64, 32):
        for block_v in (64,):
            for warps in (8, 4):
                for stages in (1, 2, 3):
                    forward.WARPS["forward"]["low"] = warps
                    forward.STAGES["forward"]["low"] = stages
                    try:
                        ms = triton.testing.do_bench(lambda c=chunk, bv=block_v: (
                            bench.ours_forward(low, f32, chunk=c, block_v=bv)))
                    except Exception as err:  # noqa: BLE001 (out of resources: a row)
                        print(f"forward C{chunk} BV{block_v} w{warps} s{stages}: "
                              f"{type(err).__name__}", flush=True)
                        continue
                    print(f"forward C{chunk} BV{block_v} w{warps} s{stages}: {ms:.4f} ms",
                          flush=True)
    forward.WARPS["forward"].update(saved[0])
    forward.STAGES["forward"].update(saved[1])
    forward_tables(low, f32, rows)


def phase_rotation_sweep(rows: int) -> None:
    """The forward at 16 x 2048 (bf16), timed whole, over turn_sums_kernel's block and warps
    and rotate_fwd_kernel's rows and warps (one setting changed at a time), then the kernel
    table at the defaults."""
    low, f32 = bench.inputs(16, 2048, torch.bfloat16)
    saved = {name: getattr(forward, name) for name in
             ("PHASE_BLOCK", "PHASE_WARPS", "ROTATE_ROWS", "ROTATE_WARPS")}
    settings = [("PHASE_BLOCK", (16, 32, 64, 128)), ("PHASE_WARPS", (1, 2, 4, 8)),
                ("ROTATE_ROWS", (8, 16, 32, 64)), ("ROTATE_WARPS", (1, 2, 4, 8))]
    for name, values in settings:
        for value in values:
            setattr(forward, name, value)
            ms = triton.testing.do_bench(lambda: bench.ours_forward(low, f32))
            print(f"forward {name}={value}: {ms:.4f} ms", flush=True)
        setattr(forward, name, saved[name])
    forward_tables(low, f32, rows)


def baseline(rows: int) -> None:
    """The forward at 16 x 2048 (bf16) as set, then mamba_ssm's on the same inputs."""
    low, f32 = bench.inputs(16, 2048, torch.bfloat16)
    print(f"forward ours: {triton.testing.do_bench(lambda: bench.ours_forward(low, f32)):.4f} ms",
          flush=True)
    forward_tables(low, f32, rows)


def forward_tables(low, f32, rows: int) -> None:
    """The forward's kernel table as set, then mamba_ssm's forward timed and tabled."""
    kernel_table("forward 16x2048, ours", lambda: bench.ours_forward(low, f32), rows)
    theirs_forward(low, f32, rows)


def theirs_forward(low, f32, rows: int) -> None:
    """mamba_ssm's forward on the same inputs, the same call's baseline (needs MAMBA_SSM_SRC)."""
    try:
        ms = triton.testing.do_bench(lambda: bench.theirs_forward(low, f32))
    except (ImportError, OSError) as err:
        print(f"mamba_ssm's forward not timed: {err}")
        return
    print(f"forward mamba_ssm: {ms:.4f} ms", flush=True)
    kernel_table("forward 16x2048, mamba_ssm", lambda: bench.theirs_forward(low, f32), rows)


@triton.jit
def _phase_part_kernel(angles, dt, out, n, A, PART: tl.constexpr, BLOCK: tl.constexpr):
    """One of the phase kernel's per-element parts over flat [B, T, H, A] angles (dt read per
    element, as a row's): "copy" (loads and the fp64 store alone), "turn" (phase_step:
    tanh64, fp64), "fmod" (ops.mod_two_pi of a value up to 2 pi + 64 pi), "fma"
    (ops.mod_two_pi_near of the same: the blocks' and carries' reduction)."""
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    x = tl.load(angles + i, mask=m, other=0.0).to(tl.float64)
    d = tl.load(dt + i // A, mask=m, other=0.0)
    if PART == "turn":
        x = phase_step(x, d)
    elif PART == "fmod":
        x = mod_two_pi(x * 64.0 + d)
    elif PART == "fma":
        x = mod_two_pi_near(x * 64.0 + d)
    else:
        x = x + d
    tl.store(out + i, x, mask=m)


def phase_parts() -> None:
    """Where the phases' time goes at 16 x 2048 (bf16 layer, 32 heads x 32 angles): their two
    kernels launched bare (turn_sums_kernel, phase_carry_kernel), against each per-element
    part over the same elements with every element in parallel."""
    low, f32 = bench.inputs(16, 2048, torch.bfloat16)
    adt, dt, angles, D, *states = f32
    B, T, H, A = angles.shape
    theta_t = torch.empty(B, H, A, dtype=angles.dtype, device=angles.device)
    ms = triton.testing.do_bench(lambda: forward.launch_phases(angles, dt, states[0], theta_t))
    print(f"phases bare, block {forward.PHASE_BLOCK}, {forward.PHASE_WARPS} warps: {ms:.4f} ms",
          flush=True)
    # dt per element's row: [B, T, H] in the kernel's [B, H, T] read as the flat index // A
    rows_dt = dt.transpose(1, 2).contiguous()
    phase = torch.empty(B, T, H, A, dtype=torch.float64, device=angles.device)
    n, block = angles.numel(), 1024
    for part in ("copy", "turn", "fmod", "fma"):
        ms = triton.testing.do_bench(lambda part=part: _phase_part_kernel[(triton.cdiv(n, block),)](
            angles, rows_dt, phase, n, A, PART=part, BLOCK=block, num_warps=4))
        print(f"phase part {part}, {n} elements in parallel: {ms:.4f} ms", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=12)
    ap.add_argument("--parts", default="decode,sequence,first_call",
                    help="comma-separated, run in this order: decode, sequence, first_call, "
                    "forward_sweep, phase_rotation_sweep, phase_parts, baseline, "
                    "backward_sweep, train_shapes, state_block_sweep, forward_walks")
    args = ap.parse_args()
    parts = {"decode": lambda: decode(args.rows), "sequence": lambda: sequence(args.rows),
             "first_call": first_calls, "forward_sweep": lambda: forward_sweep(args.rows),
             "phase_rotation_sweep": lambda: phase_rotation_sweep(args.rows),
             "phase_parts": phase_parts, "baseline": lambda: baseline(args.rows),
             "backward_sweep": lambda: backward_sweep(args.rows), "train_shapes": train_shapes,
             "state_block_sweep": state_block_sweep, "forward_walks": forward_walks}
    for part in args.parts.split(","):
        parts[part]()


if __name__ == "__main__":
    main()
