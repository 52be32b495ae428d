"""What kernels/mamba3's hot kernels compile to on sm_90, without a GPU: registers, spills,
shared memory (ptxas -v through TRITON_DUMP_PTXAS_LOG, as kdiff/sandbox/launches.py reads
it) and a static count of SASS instructions by class (nvdisasm from Triton's wheel), over
launch options, at the paper's layer shapes (kernels/mamba3/bench.py: B 16, T 2048, 4 key
heads x 8, K 128, V 64, A 32; the decode step at B 128, T 1).

    python benchmarks/mamba3_compile_sweep.py [--kernels chunk_fwd,chunk_states,chunk_out,chunk_state_bwd,chunk_intra_bwd,state_bwd,rotate_bwd,decode,phase,phase_fwd,rotate]
        [--dtypes bf16,fp32] [--jobs 2] [--timeout 300] [--out table.txt]

Each compile runs in its own process (a fresh Triton cache, so ptxas runs and logs) and is
cut off after --timeout seconds. Compile with the device's Triton, not this machine's: the
H200's 3.6 and 3.9 give other code (the decode step at 4 warps, BV 32, bf16: 255 registers,
1.6 kB of spills and 1,478 fp64 instructions with 3.6; 128 registers, no spills and 102 with
3.9). Install it beside (`pip install --target /tmp/t36 --no-deps triton==3.6.0`) and run
with `PYTHONPATH=/tmp/t36`. The signatures follow Triton's JIT at a bench.py call:
pointers and integers divisible by 16 carry tt.divisibility 16, an integer equal to 1 (the
decode step's T) and None are constexprs. Counts are static (a loop's body counts once).
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import io
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from tabulate import tabulate

B, T, HQ, G, K, V, A = 16, 2048, 4, 8, 128, 64, 32
H = HQ * G
DECODE_B = 128

# SASS opcode (before the first '.') -> class; the rest count in "other"
CLASSES = {
    "fp64": {"DFMA", "DADD", "DMUL", "DSETP", "DMNMX", "DSET"},
    "mufu": {"MUFU"},
    "mma": {"HMMA", "HGMMA", "WGMMA", "IMMA", "QGMMA"},
    "ffma": {"FFMA", "FADD", "FMUL", "FMNMX", "FSETP", "FSEL"},
    "ldl/stl": {"LDL", "STL"},
    "lds/sts": {"LDS", "STS", "LDSM", "STSM"},
    "ldg/stg": {"LDG", "STG"},
    "cvt": {"F2F", "F2FP", "I2F", "F2I", "I2FP", "F2IP"},
    "bar": {"BAR"},
}


def kernel_jobs(kernels, dtypes):
    """(kernel, dtype, options) for every point of the sweep."""
    grid = {"chunk_fwd": dict(num_warps=(4, 8), num_stages=(1, 2), BV=(16, 32, 64), BT=(32, 64)),
            "chunk_states": dict(num_warps=(2, 4, 8), num_stages=(1, 2), BV=(16, 32, 64),
                                 BT=(64,)),
            "chunk_out": dict(num_warps=(4, 8), num_stages=(1, 2), BV=(64,), BT=(32, 64)),
            "phase_fwd": dict(num_warps=(4, 8), num_stages=(1,), BT=(8, 16, 32)),
            "chunk_state_bwd": dict(num_warps=(4, 8), num_stages=(1, 2), BT=(32, 64)),
            "chunk_intra_bwd": dict(num_warps=(4, 8), num_stages=(1, 2), BT=(32, 64)),
            "state_bwd": dict(num_warps=(4, 8), num_stages=(1, 2, 3), BT=(64,), BV=(16, 32, 64)),
            "decode": dict(num_warps=(1, 2, 4, 8), num_stages=(1, 2), BV=(16, 32, 64)),
            "phase": dict(num_warps=(1, 2, 4, 8), num_stages=(1,), BS=(16, 32, 64, 128)),
            "rotate": dict(num_warps=(2, 4, 8), num_stages=(1,), BT=(8, 16, 32, 64), BS=(64,)),
            "rotate_bwd": dict(num_warps=(2, 4, 8), num_stages=(1,), BT=(8, 16, 32))}
    for name in kernels:
        keys = list(grid[name])
        for dtype in dtypes:
            for values in itertools.product(*(grid[name][k] for k in keys)):
                yield {"kernel": name, "dtype": dtype, **dict(zip(keys, values))}


def _signature(fn, types: dict, ints: dict, constexprs: dict):
    """Triton's JIT specialisation: (signature, constexprs, attrs) keyed by fn's names."""
    sig, const, attrs = {}, {}, {}
    for i, name in enumerate(fn.arg_names):
        if name in constexprs:
            sig[name] = "constexpr"
            const[name] = constexprs[name]
        elif name in ints:
            if ints[name] == 1:
                sig[name] = "constexpr"
                const[name] = 1
            else:
                sig[name] = "i32"
                if ints[name] % 16 == 0:
                    attrs[(i,)] = [["tt.divisibility", 16]]
        else:
            sig[name] = types.get(name, "*fp32")
            attrs[(i,)] = [["tt.divisibility", 16]]
    return sig, const, attrs


def source(job):
    """The ASTSource of one sweep point."""
    import triton

    from kdiff.kernels.mamba3 import backward, forward, recurrent
    low = "*bf16" if job["dtype"] == "bf16" else "*fp32"
    # bench.py: q, k, v, trap, q_bias, k_bias, z in the working dtype; adt, dt, angles, D
    # and the initial states fp32; outputs and final states in the working dtype
    lows = dict.fromkeys(("q", "k", "v", "trap", "q_bias", "k_bias", "z", "out", "ST", "kT",
                          "vT", "thetaT", "dout", "dST", "dkT", "dvT", "qr", "kr"), low)
    # the buffers the training step's kernels leave each other: forward.saved_dtype's
    lows.update(dict.fromkeys(("hbuf", "ybuf", "dhbuf", "dqr", "dkr"), low))
    ints = dict(T=T, H=H, G=G, K=K, V=V, A=A)
    flags = dict(HAS_D=True, HAS_Z=True, BK2=K // 2)
    if job["kernel"] == "chunk_fwd":  # turns q and k itself from phase_fwd_kernel's phases
        fn = forward.chunk_fwd_kernel
        const = dict(flags, BT=job["BT"], BV=job["BV"])
        types = dict(lows, theta="*fp32")
    elif job["kernel"] == "chunk_states":
        fn = forward.chunk_states_kernel
        const = dict(BK2=K // 2, BT=job["BT"], BV=job["BV"])
        types = lows
    elif job["kernel"] == "chunk_out":
        fn = forward.chunk_out_kernel
        const = dict(flags, BT=job["BT"], BV=job["BV"], STORE=True)
        types = lows
    elif job["kernel"] == "phase_fwd":
        fn = forward.phase_fwd_kernel
        const = dict(BT=job["BT"], BK2=K // 2, BS=16)
        types = dict(lows, sums="*fp64", carry="*fp64", walked="*i32", theta="*fp32")
    elif job["kernel"] == "rotate":
        fn = forward.rotate_fwd_kernel
        const = dict(BT=job["BT"], BK2=K // 2, BS=job["BS"], STORE=False)
        types = dict(lows, sums="*fp64", carry="*fp64", walked="*i32")
    elif job["kernel"] == "chunk_state_bwd":
        fn = backward.chunk_state_bwd_kernel
        const = dict(flags, BT=job["BT"], BV=V)
        types = lows
    elif job["kernel"] == "chunk_intra_bwd":
        fn = backward.chunk_intra_bwd_kernel
        const = dict(BK2=K // 2, HAS_Z=True, BT=job["BT"], BV=V)
        types = lows
    elif job["kernel"] == "state_bwd":
        fn = backward.state_bwd_kernel
        const = dict(BT=job["BT"], BK2=K // 2, BV=job["BV"], HAS_Z=True)
        types = lows
    elif job["kernel"] == "rotate_bwd":
        fn = backward.rotate_bwd_kernel
        const = dict(BT=job["BT"], BK2=K // 2)
        types = dict(lows, phase="*fp64")
    elif job["kernel"] == "phase":
        fn = forward.turn_sums_kernel
        const = dict(BA=A, BS=job["BS"])
        types = dict(sums="*fp64")
    else:
        fn = recurrent.recurrent_fwd_kernel
        const = dict(flags, BV=job["BV"], GATED=False, when=None)
        types = lows
        ints["T"] = 1
    sig, const, attrs = _signature(fn, types, ints, const)
    return triton.compiler.ASTSource(fn=fn, signature=sig, constexprs=const, attrs=attrs)


def sass_counts(cubin: bytes) -> dict:
    import triton
    nvdisasm = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin",
                            "nvdisasm")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        sass = subprocess.run([nvdisasm, "-c", f.name], capture_output=True, text=True,
                              check=True).stdout
    counts = collections.Counter()
    for line in sass.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", line)
        if not m:
            continue
        op = m.group(1)
        counts["total"] += 1
        counts[next((c for c, ops in CLASSES.items() if op in ops), "other")] += 1
        if op in {"F2F", "I2F", "F2I"} and ".F64" in line:
            counts["cvt f64"] += 1
    return dict(counts)


def compile_one(job) -> dict:
    """In the child: compile, read ptxas's log and the SASS."""
    import triton
    from triton.backends.compiler import GPUTarget

    from kdiff.sandbox.launches import compiled_metadata, measure
    os.environ["TRITON_DUMP_PTXAS_LOG"] = "1"
    options = {"num_warps": job["num_warps"], "num_stages": job["num_stages"]}
    log = io.StringIO()
    with contextlib.redirect_stdout(log):
        compiled = triton.compile(source(job), target=GPUTarget("cuda", 90, 32), options=options)
    text = log.getvalue()
    # RES-02's reading of the same log
    resources = measure(compiled_metadata(compiled), "", "sm_90", text)
    loads = [int(n) for n in re.findall(r"(\d+) bytes spill loads", text)]
    return {"regs": resources.registers, "spill_st": resources.spill_store_bytes,
            "spill_ld": max(loads) if loads else None, "shared": resources.shared_bytes,
            **sass_counts(compiled.asm["cubin"])}


def run_job(job, timeout) -> dict:
    """In the parent: one child per compile, with its own cache and a time box."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TRITON_CACHE_DIR=cache)
        env.pop("TRITON_INTERPRET", None)
        try:
            proc = subprocess.run([sys.executable, __file__, "--one", json.dumps(job)],
                                  capture_output=True, text=True, timeout=timeout, env=env)
            lines = proc.stdout.strip().splitlines()
            if proc.returncode == 0 and lines:
                result = json.loads(lines[-1])
            else:
                result = {"error": (proc.stderr.strip().splitlines() or ["?"])[-1][:80]}
        except subprocess.TimeoutExpired:
            result = {"error": f"timeout {timeout} s"}
    return {**job, **result, "s": round(time.perf_counter() - start)}


COLUMNS = ["kernel", "dtype", "num_warps", "num_stages", "BT", "BV", "BS", "STORE", "regs", "spill_st",
           "spill_ld", "shared", "fp64", "cvt f64", "mufu", "mma", "ffma", "ldl/stl", "lds/sts",
           "ldg/stg", "bar", "total", "s", "error"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", default="chunk_fwd,chunk_state_bwd,chunk_intra_bwd,decode")
    ap.add_argument("--dtypes", default="bf16,fp32")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--filter", default="", help="k=v,... keep only matching points")
    ap.add_argument("--out", help="also write the table here")
    ap.add_argument("--json", help="also write the rows here")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(compile_one(json.loads(args.one))))
        return
    wanted = dict(kv.split("=") for kv in args.filter.split(",") if kv)
    jobs = [j for j in kernel_jobs(args.kernels.split(","), args.dtypes.split(","))
            if all(str(j.get(k)) == v for k, v in wanted.items())]
    rows = []
    with ThreadPoolExecutor(args.jobs) as pool:
        for row in pool.map(lambda j: run_job(j, args.timeout), jobs):
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    table = tabulate([[r.get(c, "") for c in COLUMNS] for r in rows], headers=COLUMNS)
    print(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
