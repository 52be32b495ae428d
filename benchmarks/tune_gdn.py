"""`kdiff tune` on the chunked Gated DeltaNet (kernels/gdn), or with --kernel mamba3 the chunked
Mamba-3 SISO forward (kernels/mamba3), on a GPU: GRPO, random search and Triton's autotuner's way on the same budget, every configuration but the autotuner's judged
by the gates before it is timed. Its space (kernels/tune_examples/gdn_tunable.py): chunk size,
the fp32 products in IEEE or TF32 (the precision-trading variant), fp32 warps, the WY
inverse's warps, the state scan's and the output's V-blocks. Measured: the best correct
configuration each method found, when it got there, the fast configurations the contract
rejected, and whether the autotuner's pick passes.

    python benchmarks/tune_gdn.py --seconds 360 [--budget 24] [--gates PRC-01] [--judges 6]
        [--kernel gdn|mamba3]
        [--time-sizes '{"seq_len": 8192, "num_heads": 16, "head_dim_k": 64, "head_dim_v": 64}']

Judged at the problem's own sizes (1_GatedDeltaNet.py: 24 tokens, K = V = 16); timed by
do_bench in fp32 (the gates' dtype, where TF32 is the trade) at --time-sizes, forward only.
Each method gets an equal share of --seconds and begins no batch past it (a batch begun
before, judging and compiling included, can overrun its share by its own time). --judges N:
a batch's configurations are judged N at once, each in a judge process of its own, while
the timing processes compile them; then they are measured one at a time (docs/tune.md).
Writes tune_gdn.json and tune_gdn.md under $OUT (or the current folder).

--kernel mamba3: problem 1_Mamba3SISO.py (the forward; judged at its 24 tokens, K = V = 16)
with kernels/tune_examples/mamba3_tunable.py (chunk size, V-block, IEEE or TF32 products,
fp32 warps and stages), timed at the layer's heads (4 key heads x 8, V = 64, as
kernels/mamba3/bench.py) with K = 64 for its 128 (the compile's size), 8192 tokens; writes
tune_mamba3.json and tune_mamba3.md.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from kdiff.commands.tune import table
from kdiff.judging.context import GateOptions
from kdiff.judging.runconfig import RunConfig
from kdiff.tune.judge import ConfigJudge
from kdiff.tune.policy import GRPOSettings
from kdiff.tune.search import run
from kdiff.tune.space import describe, read_space
from kdiff.tune.timing import ProcessTimer

ROOT = Path(__file__).resolve().parent.parent
# kernel: (problem, candidate, timing sizes)
KERNELS = {
    # A long-sequence shape with head dims small enough that each configuration's fp32 compile
    # stays in seconds (K = V = 128 in fp32 took about a minute for the nine kernels on the
    # H200, chunk.py's FP32_MIN_WARPS note).
    "gdn": (ROOT / "kernels/gdn/kernelbench/KernelBench/level3/1_GatedDeltaNet.py",
            ROOT / "kernels/tune_examples/gdn_tunable.py",
            {"batch_size": 1, "seq_len": 8192, "num_heads": 16, "head_dim_k": 64,
             "head_dim_v": 64}),
    # kernels/mamba3/bench.py's layer (4 key heads x 8, d_state K = 128, headdim V = 64) with
    # K halved, as GDN's above, to keep the fp32 chunk kernel's compile short; one sequence of
    # 8192 tokens.
    "mamba3": (ROOT / "kernels/mamba3/kernelbench/KernelBench/level3/1_Mamba3SISO.py",
               ROOT / "kernels/tune_examples/mamba3_tunable.py",
               {"batch_size": 1, "seq_len": 8192, "num_heads_qk": 4, "heads_per_qk": 8,
                "head_dim_qk": 64, "head_dim_v": 64}),
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=360.0)
    p.add_argument("--budget", type=int, default=24, help="new configurations per method")
    p.add_argument("--methods", default="grpo,random,autotuner")
    p.add_argument("--gates", default="PRC-01")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--group", type=int, default=GRPOSettings.group,
                   help="GRPO's group (fewer where a configuration takes a minute to judge)")
    p.add_argument("--judges", type=int, default=1,
                   help="configurations judged (and compiled for timing) at once")
    p.add_argument("--kernel", choices=sorted(KERNELS), default="gdn")
    p.add_argument("--time-sizes", default=None,
                   help="JSON of the problem's size names (default: the kernel's, above)")
    p.add_argument("--device", default="cuda")
    args = p.parse_args()
    if args.judges < 1:
        p.error("--judges: at least 1")
    problem, candidate, time_sizes = KERNELS[args.kernel]
    if args.time_sizes is not None:
        time_sizes = json.loads(args.time_sizes)
    out = Path(os.environ.get("OUT", "."))
    name = f"tune_{args.kernel}"
    space = read_space(candidate)
    config = RunConfig(gates=args.gates.split(","), gate_options=GateOptions(device=args.device))
    judge = ConfigJudge(problem, candidate, space, config, judges=args.judges)
    timer = ProcessTimer(problem, judge.write, args.device,
                         "do_bench" if args.device == "cuda" else "wall",
                         sizes=time_sizes,
                         compile_cache=judge.workdir / "triton-cache")
    methods = args.methods.split(",")
    share = args.seconds / len(methods)
    results = []
    for method in methods:
        start = time.monotonic()
        try:
            results.append(run(method, space, judge, timer, args.budget, args.seed,
                               GRPOSettings(group=args.group), deadline=start + share,
                               judges=args.judges))
        except KeyboardInterrupt:  # a device budget's SIGINT: report the methods finished
            print(f"{method}: interrupted; reporting the methods before it", flush=True)
            break
        r = results[-1]
        print(f"{method}: {len(r.evaluations)} configurations in "
              f"{time.monotonic() - start:.0f} s", flush=True)
        for e in r.evaluations:
            print(f"  {e.order:2d} {describe(e.config):70s} "
                  f"{e.time * 1e3 if e.time else float('nan'):8.3f} ms at {e.wall:5.0f} s "
                  f"{e.judgement.outcome.value} {' '.join(e.judgement.failing)}"
                  f"{' ' + e.time_error if e.time_error else ''}", flush=True)
        (out / f"{name}.json").write_text(json.dumps(
            {"kernel": args.kernel, "space": {k.name: list(k.choices) for k in space.knobs},
             "time_sizes": time_sizes, "gates": config.gates,
             "results": [x.to_json() for x in results]}, indent=1))
    judge.close()
    print(table(results))
    (out / f"{name}.md").write_text(table(results, "github") + "\n")


if __name__ == "__main__":
    main()
