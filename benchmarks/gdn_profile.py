"""Where the chunked GDN's time goes on a GPU: the device time of every kernel launch in one
forward and one forward+backward call, ours beside fla's, from torch.profiler; then a sweep
of the forward state scan's launch settings (V-block, warps, pipeline stages), each timed by
its own kernel's device time inside a whole forward.

    python benchmarks/gdn_profile.py [--shapes 1x8192x96,4x4096x64] [--sweep]

bf16, K = V = 128, the inputs of gdn_bench.py. Writes gdn_profile.json under $OUT when set.
The per-kernel times are means over ITERS profiled calls after a warm-up (compile and
autotune excluded); the sum over kernels is device time only (no launch gaps, no host sync),
so it can be below the do_bench wall time of gdn_bench.py.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from collections import defaultdict

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(__file__))
import gdn_bench  # noqa: E402  (sets fla's backend environment before importing it)
from kdiff.kernels.gdn import chunk as gdn_chunk  # noqa: E402

D = 128
ITERS = 10


def kernel_times(fn) -> dict[str, float]:
    """Mean device milliseconds per call of each kernel name that `fn` launches."""
    for _ in range(3):  # compile, autotune, allocator warm-up
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(ITERS):
            fn()
        torch.cuda.synchronize()
    totals: dict[str, float] = defaultdict(float)
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            totals[event.name] += event.time_range.elapsed_us() / 1000 / ITERS
    return dict(sorted(totals.items(), key=lambda kv: -kv[1]))


def calls(fn, B, T, H):
    xs = gdn_bench.make_inputs(B, T, H, D, D, torch.bfloat16, "cuda", requires_grad=True)
    do = torch.randn(B, T, H, D, device="cuda", dtype=torch.bfloat16)

    def forward():
        with torch.no_grad():
            fn(*xs[:5], initial_state=xs[5], output_final_state=True)

    def forward_backward():
        for x in xs:
            x.grad = None
        out, _ = fn(*xs[:5], initial_state=xs[5], output_final_state=True)
        out.backward(do)

    return forward, forward_backward


def short(name: str, width: int = 60) -> str:
    return name if len(name) <= width else name[:width - 3] + "..."


def profile_shape(B, T, H) -> dict:
    impls = [("ours", gdn_bench.ours)]
    if gdn_bench.fla_impl() is not None:
        impls.append(("fla", gdn_bench.fla_impl()))
    result = {"shape": [B, T, H]}
    for name, fn in impls:
        forward, forward_backward = calls(fn, B, T, H)
        for mode, call in (("fwd", forward), ("fwd_bwd", forward_backward)):
            try:
                times = kernel_times(call)
            except Exception as exc:  # noqa: BLE001 - fla's backward may refuse (its guard)
                result[f"{name}_{mode}_error"] = f"{type(exc).__name__}: {exc}"[:300]
                print(f"  {name} {mode} ({B},{T},{H}): {result[f'{name}_{mode}_error']}")
                continue
            result[f"{name}_{mode}"] = times
            print(f"  {name} {mode} ({B},{T},{H}): device total {sum(times.values()):.3f} ms")
            for kernel, ms in times.items():
                print(f"    {ms:8.3f} ms  {short(kernel)}")
        torch.cuda.empty_cache()
    return result


def sweep_state_fwd(B, T, H) -> list[dict]:
    """The forward state scan under each (BV, warps, stages): its own device time inside a
    forward (the other kernels keep their settings)."""
    forward, _ = calls(gdn_bench.ours, B, T, H)
    saved = (gdn_chunk.STATE_BV, dict(gdn_chunk.WARPS), dict(gdn_chunk.STAGES))
    rows = []
    try:
        for bv, warps, stages in itertools.product((32, 64), (2, 4, 8), (1, 2, 3)):
            gdn_chunk.STATE_BV = bv
            gdn_chunk.WARPS["state_fwd"] = warps
            gdn_chunk.STAGES["state_fwd"] = stages
            row = {"bv": bv, "warps": warps, "stages": stages}
            try:
                times = kernel_times(forward)
                row["state_fwd_ms"] = sum(ms for k, ms in times.items() if "state_fwd" in k)
                row["forward_device_ms"] = sum(times.values())
            except Exception as exc:  # noqa: BLE001 - e.g. out of shared memory
                row["error"] = f"{type(exc).__name__}: {exc}"[:200]
            print(f"  sweep ({B},{T},{H}) BV {bv} warps {warps} stages {stages}: "
                  + (f"state_fwd {row['state_fwd_ms']:.3f} ms, forward {row['forward_device_ms']:.3f} ms"
                     if "error" not in row else row["error"]), flush=True)
            rows.append(row)
    finally:
        gdn_chunk.STATE_BV, gdn_chunk.WARPS, gdn_chunk.STAGES = (
            saved[0], saved[1], saved[2])
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="1x8192x96,4x4096x64")
    ap.add_argument("--sweep", action="store_true", help="also sweep the forward scan's launch")
    args = ap.parse_args()
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
        for B, T, H in shapes:
            report["sweeps"].append({"shape": [B, T, H], "rows": sweep_state_fwd(B, T, H)})
            save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
