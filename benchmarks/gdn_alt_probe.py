"""Which launch of the GDN backward raises an illegal memory access on the GPU, and in which
setting: P^T dO in its own kernel or inside the backward scan (chunk.SPLIT_LOCAL_DU), the state
scans narrowed to 32 columns or not (chunk.few_programs). gdn_bench.py's "alt f+b" timing at
(4, 2048, 16), bf16, raised one on the H200 (Triton 3.6): in-scan at the narrowed width, an
"Invalid __shared__ read of size 1024 bytes" in state_bwd_kernel's tile product under
compute-sanitizer; the same settings in fp32 through the interpreter give gradients bitwise
equal to the default path's. chunk.backward_scan_few no longer narrows the in-scan scan, so
that setting now runs at 64 columns (the line says the width it ran at).

Each setting runs one forward+backward in its own child process with CUDA_LAUNCH_BLOCKING=1
(an illegal access leaves the CUDA context unusable, and blocking launches make the error
surface at the launch that caused it); the child prints the kernel launch it died in. With
--memcheck, a failing setting runs again under compute-sanitizer.

    python benchmarks/gdn_alt_probe.py [--shape 4x2048x16] [--memcheck]
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import traceback

SETTINGS = {  # name: (SPLIT_LOCAL_DU, narrow the state scans where programs are few)
    "split, narrowed": (True, True),
    "split, 64 columns": (True, False),
    "in-scan, narrowed": (False, True),
    "in-scan, 64 columns": (False, False),
}


def child(shape: str, setting: str) -> int:
    import torch
    sys.path.insert(0, os.path.dirname(__file__))
    import gdn_bench

    from kdiff.kernels.gdn import chunk as gdn_chunk
    split, narrow = SETTINGS[setting]
    gdn_chunk.SPLIT_LOCAL_DU = split
    if not narrow:
        gdn_chunk.multiprocessors = lambda device: 0  # never fewer programs than that
    B, T, H = (int(n) for n in shape.split("x"))
    xs = gdn_bench.make_inputs(B, T, H, 128, 128, torch.bfloat16, "cuda", requires_grad=True)
    try:
        o, _ = gdn_bench.ours(*xs[:5], initial_state=xs[5], output_final_state=True)
        o.backward(torch.randn_like(o))
        torch.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001 - the report is the point
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if "kernels/gdn" in f.filename]
        where = f"{frames[-1].filename.split('kernels/gdn/')[-1]}:{frames[-1].lineno} " \
                f"{frames[-1].line}" if frames else "?"
        print(f"{setting}: FAIL at {where}: {type(exc).__name__}: {str(exc).splitlines()[0]}")
        return 1
    few = gdn_chunk.backward_scan_few(B * H, 128, xs[0].device)
    print(f"{setting}: ok (backward state-scan V-block {gdn_chunk.scan_bv('state_bwd', few, 128)})")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="4x2048x16")
    ap.add_argument("--memcheck", action="store_true")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.shape, args.child)
    env = {**os.environ, "CUDA_LAUNCH_BLOCKING": "1"}
    failed = []
    for setting in SETTINGS:
        argv = [sys.executable, __file__, "--shape", args.shape, "--child", setting]
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
        lines = [ln for ln in done.stdout.splitlines() if ln.startswith(setting)]
        print(lines[-1] if lines else f"{setting}: exit {done.returncode}: "
              f"{done.stderr.strip().splitlines()[-1:]}", flush=True)
        if done.returncode:
            failed.append(argv)
    sanitizer = shutil.which("compute-sanitizer") or "/usr/local/cuda/bin/compute-sanitizer"
    if args.memcheck and failed and os.path.exists(sanitizer):
        done = subprocess.run([sanitizer, "--tool", "memcheck", "--print-limit", "5",
                               *failed[0]], env=env, capture_output=True, text=True, timeout=300)
        print("\n".join((done.stdout + done.stderr).splitlines()[:60]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
