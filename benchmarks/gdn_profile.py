"""Where the chunked GDN's time goes on a GPU: the device time of every kernel launch in one
forward and one forward+backward call, ours beside fla's, from torch.profiler; then (--sweep) a search
of every kernel's launch settings (warps, pipeline stages, block widths: GRIDS), each
setting timed by its own kernel's device time inside a whole call.

    python benchmarks/gdn_profile.py [--shapes 1x8192x96,4x4096x64] [--sweep]

bf16, K = V = 128, the inputs of gdn_bench.py. Writes gdn_profile.json under $OUT when set.
The per-kernel times are means over ITERS profiled calls after a warm-up (compile and
autotune excluded); the sum over kernels is device time only (no launch gaps, no host sync),
so it can be below the do_bench wall time of gdn_bench.py. Where the two differ, the
timeline says why: each call's GPU waits for the host (before its first kernel, between
kernels, after its last) are reported beside the kernels (idle_within_calls).
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from collections import defaultdict

import torch
from torch.profiler import ProfilerActivity, profile, record_function
from triton.testing import do_bench

sys.path.insert(0, os.path.dirname(__file__))
import gdn_bench

from kdiff.kernels.gdn import chunk as gdn_chunk

D = 128
ITERS = 10


# A gap this long between one device operation's end and the next one's start is the GPU
# waiting for the host (a launch not yet issued, a host sync); shorter ones are the launch
# pipeline's own spacing.
IDLE_GAP_US = 5.0
CALL_RANGE = "gdn_profile.call"


def kernel_times(fn, idle: dict[str, float] | None = None) -> dict[str, float]:
    """Mean device milliseconds per call of each kernel name that `fn` launches. With `idle`,
    also where the GPU waited for the host within a call (idle_within_calls)."""
    for _ in range(3):  # compile, autotune, allocator warm-up
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(ITERS):
            with record_function(CALL_RANGE):
                fn()
                torch.cuda.synchronize()
    totals: dict[str, float] = defaultdict(float)
    device_events = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
                     and e.name != CALL_RANGE]  # the range's own device-side copy
    for event in device_events:
        totals[event.name] += event.time_range.elapsed_us() / 1000 / ITERS
    if idle is not None:
        # the host's ranges only: the range's device-side copy spans just the kernels that
        # the calling thread launched (not the backward's, launched by autograd's thread)
        call_ranges = sorted((e.time_range.start, e.time_range.end) for e in prof.events()
                             if e.name == CALL_RANGE
                             and e.device_type == torch.autograd.DeviceType.CPU)
        idle.update(idle_within_calls(call_ranges, device_events))
    return dict(sorted(totals.items(), key=lambda kv: -kv[1]))


def idle_within_calls(call_ranges, device_events) -> dict[str, float]:
    """Mean milliseconds per call that the GPU spent waiting for the host: "(before the first
    kernel)" from the call's start on the host, then each gap over IDLE_GAP_US between
    consecutive device operations, attributed to the operation after it, and "(after the
    last kernel)" up to the call's end (each profiled call ends in a device sync, so that
    is host work after the GPU finished). The sum is a call's wall time less its busy time,
    the time do_bench counts and the per-kernel table does not."""
    spans = sorted((e.time_range.start, e.time_range.end, e.name) for e in device_events)
    idle: dict[str, float] = defaultdict(float)
    for call_start, call_end in call_ranges:
        inside = [s for s in spans if call_start <= s[0] < call_end]
        if not inside:
            continue
        idle["(before the first kernel)"] += inside[0][0] - call_start
        busy_until = inside[0][1]
        for start, end, name in inside[1:]:
            if start - busy_until > IDLE_GAP_US:
                idle[name] += start - busy_until
            busy_until = max(busy_until, end)
        idle["(after the last kernel)"] += max(0.0, call_end - busy_until)
    per_call = {k: v / 1000 / len(call_ranges) for k, v in idle.items()}
    return dict(sorted(per_call.items(), key=lambda kv: -kv[1]))


def calls(fn, B, T, H):
    """gdn_bench's two timed calls of `fn` at (B, T, H), bf16, K = V = D."""
    xs = gdn_bench.make_inputs(B, T, H, D, D, torch.bfloat16, "cuda", requires_grad=True)
    do = torch.randn(B, T, H, D, device="cuda", dtype=torch.bfloat16)
    return gdn_bench.calls(fn, xs, do)


def short(name: str, width: int = 60) -> str:
    return name if len(name) <= width else name[:width - 3] + "..."


def profile_shape(B, T, H, with_fla: bool = True) -> dict:
    impls = [("ours", gdn_bench.ours)]
    if with_fla and gdn_bench.fla_impl() is not None:
        impls.append(("fla", gdn_bench.fla_impl()))
    result = {"shape": [B, T, H]}
    for name, fn in impls:
        forward, forward_backward = calls(fn, B, T, H)
        for mode, call in (("fwd", forward), ("fwd_bwd", forward_backward)):
            if name == "fla" and mode == "fwd_bwd" and gdn_bench.FLA_FORWARD_ONLY:
                continue
            idle: dict[str, float] = {}
            try:
                times = kernel_times(call, idle)
            except Exception as exc:  # noqa: BLE001 - fla's backward may refuse (its guard)
                result[f"{name}_{mode}_error"] = f"{type(exc).__name__}: {exc}"[:300]
                print(f"  {name} {mode} ({B},{T},{H}): {result[f'{name}_{mode}_error']}")
                continue
            result[f"{name}_{mode}"] = times
            # the wall time beside the device time: the difference is the host's share
            # (launches, allocations, autograd, host syncs) during which the GPU idles
            wall = do_bench(call, warmup=25, rep=100, return_mode="median")
            result[f"{name}_{mode}_wall_ms"] = wall
            print(f"  {name} {mode} ({B},{T},{H}): device total {sum(times.values()):.3f} ms, "
                  f"wall (do_bench median) {wall:.3f} ms")
            for kernel, ms in times.items():
                print(f"    {ms:8.3f} ms  {short(kernel)}")
            result[f"{name}_{mode}_idle"] = idle
            print(f"    GPU waiting for the host, {sum(idle.values()):.3f} ms per call, before:")
            for kernel, ms in list(idle.items())[:8]:
                print(f"    {ms:8.3f} ms  {short(kernel)}")
        torch.cuda.empty_cache()
    return result


# Launch settings tried per kernel, in pipeline order (forward kernels timed in a forward,
# backward ones in a forward+backward); "bv" is a kernel's V-block (chunk.BLOCK_V), "bk" its
# K slice (chunk.BLOCK_K). Settings absent from a grid keep chunk.py's value.
GRIDS = {
    "wy_inverse": {"warps": (1, 2), "bk": (32, 64)},
    "wy_apply": {"warps": (2, 4, 8), "stages": (2, 3, 4)},
    "state_fwd": {"bv": (16, 32, 64), "warps": (2, 4, 8), "stages": (2, 3)},
    "output_fwd": {"bk": (32, 64, 128), "bv": (64, 128), "warps": (4, 8), "stages": (2, 3)},
    "local_du": {"bv": (64, 128), "warps": (4, 8), "stages": (2, 3)},
    "state_bwd": {"bv": (16, 32, 64), "warps": (2, 4, 8), "stages": (1, 2)},
    "grad_qk": {"bv": (32, 64, 128), "warps": (4, 8), "stages": (1, 2, 3)},
    "wy_bwd": {"bv": (32, 64, 128), "warps": (4, 8), "stages": (1, 2, 3)},
}
BACKWARD = {"local_du", "state_bwd", "grad_qk", "wy_bwd"}


def few_programs(kernel: str, B: int, H: int) -> bool:
    """Whether `kernel` is a state scan that takes chunk.FEW_PROGRAMS_SCAN's settings at this
    shape (fixed-length sequences: B sequences x H heads)."""
    device = torch.device("cuda")
    if kernel == "state_fwd":
        return gdn_chunk.few_programs(kernel, B * H, D, device)
    return kernel == "state_bwd" and gdn_chunk.backward_scan_few(B * H, D, device)


def sweep(B, T, H, on_row, only: list[str] | None = None) -> dict:
    """Coordinate search: each kernel in turn under every setting of its grid, its own device
    time measured; the fastest is kept before the next kernel is swept. A state scan with few
    programs at this shape is swept in chunk.FEW_PROGRAMS_SCAN (its settings there). Returns
    the chosen settings (kernel -> setting, with its time, the time of chunk.py's setting,
    and which table it belongs to)."""
    forward, forward_backward = calls(gdn_bench.ours, B, T, H)
    chosen = {}
    for kernel, grid in GRIDS.items():
        if only and kernel not in only:
            continue
        call = forward_backward if kernel in BACKWARD else forward
        few = few_programs(kernel, B, H)
        default = gdn_bench.current_launch(kernel, few)
        best = None
        for values in itertools.product(*grid.values()):
            setting = {**default, **dict(zip(grid, values))}
            gdn_bench.apply_launch(kernel, setting, few)
            row = {"kernel": kernel, "few_programs": few, **setting}
            try:
                times = kernel_times(call)
                row["ms"] = times.get(f"{kernel}_kernel")
            except Exception as exc:  # noqa: BLE001 - e.g. out of shared memory
                row["error"] = f"{type(exc).__name__}: {exc}"[:200]
            on_row(row)
            if row.get("ms") is not None and (best is None or row["ms"] < best["ms"]):
                best = row
            if setting == default:
                chosen.setdefault(kernel, {})["default_ms"] = row.get("ms")
        if best is None:
            gdn_bench.apply_launch(kernel, default, few)
            continue
        gdn_bench.apply_launch(kernel, {k: best[k] for k in default}, few)
        chosen.setdefault(kernel, {}).update({k: best[k] for k in default}, ms=best["ms"],
                                             few_programs=few)
        print(f"  chosen {kernel}: {chosen[kernel]}", flush=True)
    return chosen


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="1x8192x96,4x4096x64")
    ap.add_argument("--sweep", action="store_true",
                    help="then search each kernel's launch settings (GRIDS) at the first shape, "
                         "and profile every shape again with the settings chosen")
    ap.add_argument("--sweep-kernels", default=None,
                    help="with --sweep: only these kernels (comma-separated GRIDS keys); the "
                         "whole grid is about 100 compiles, 8-9 minutes on the H200")
    ap.add_argument("--fla-forward-only", action="store_true",
                    help="profile fla's forward only (its backward autotunes for minutes at "
                         "every shape: the phase that tried it in full ran out of its budget)")
    args = ap.parse_args()
    gdn_bench.FLA_FORWARD_ONLY = args.fla_forward_only
    if not torch.cuda.is_available():
        print("no CUDA device: this benchmark needs a GPU")
        return 2
    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "fla": gdn_bench.fla_impl() is not None, "shapes": [], "sweeps": []}
    out = os.environ.get("OUT")

    def save():
        if out:
            with open(os.path.join(out, "gdn_profile.json"), "w") as fh:
                json.dump(report, fh, indent=1)

    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",")]
    for B, T, H in shapes:
        report["shapes"].append(profile_shape(B, T, H))
        save()
    if args.sweep:
        B, T, H = shapes[0]
        entry = {"shape": [B, T, H], "rows": []}
        report["sweeps"].append(entry)

        def on_row(row):
            entry["rows"].append(row)
            print(f"  sweep ({B},{T},{H}) " + " ".join(f"{k}={v}" for k, v in row.items()),
                  flush=True)
            save()

        entry["chosen"] = sweep(B, T, H, on_row,
                                args.sweep_kernels.split(",") if args.sweep_kernels else None)
        save()
        if out:  # for `gdn_bench.py --launch`: the same call times the chosen settings
            with open(os.path.join(out, "gdn_chosen.json"), "w") as fh:
                json.dump(entry["chosen"], fh, indent=1)
        print("with the chosen settings:")
        for B, T, H in shapes:
            report["shapes"].append(profile_shape(B, T, H, with_fla=False))
            save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
