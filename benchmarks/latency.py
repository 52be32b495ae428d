"""Wall time of the two commands a new user runs first, process start included: one
twelve-gate `kdiff verify` of a small elementwise problem (a Triton control, through the
interpreter on the CPU), and the embedded default `kdiff run --bench kernelbench` over the
shipped corpus. Writes its section of benchmarks/RESULTS.md.

    python benchmarks/latency.py --verify-runs 3 --default-runs 3
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_md import RESULTS, machine, write_section  # beside this script

ROOT = Path(__file__).resolve().parent.parent
PROBLEM = ROOT / "kernels" / "KernelBench" / "level1" / "19_ReLU.py"
CANDIDATE = ROOT / "kernels" / "runs" / "controls" / "level_1_problem_19_sample_20_kernel.py"


def timed(command: list[str], cwd: Path, env: dict[str, str] | None = None
          ) -> tuple[float, float, float]:
    """(seconds, load average before, after) of one run of `command`."""
    load = os.getloadavg()[0]
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=False, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, env={**os.environ, **(env or {})})
    return time.perf_counter() - start, load, os.getloadavg()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verify-runs", type=int, default=3)
    parser.add_argument("--default-runs", type=int, default=1,
                        help="cold default runs (each with an empty resource cache)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    verify = ["kdiff", "verify", "--problem", str(PROBLEM.relative_to(ROOT)),
              "--candidate", str(CANDIDATE.relative_to(ROOT)), "--device", "cpu"]
    with tempfile.TemporaryDirectory(prefix="kdiff-latency-") as tmp:
        verifies = [timed(verify, ROOT) for _ in range(args.verify_runs)]
        # Cold: an empty resource cache each time (a fresh machine: RES-02 compiles every
        # Triton launch for sm_100 and sm_90); then warm, with the cache the last one filled.
        colds = []
        for i in range(args.default_runs + 1):
            folder = Path(tmp) / f"run{i}"
            folder.mkdir()
            cache = {"KDIFF_CACHE": str(Path(tmp) / f"cache{min(i, args.default_runs - 1)}")}
            run = ["kdiff", "run", "--bench", "kernelbench", "--json", str(folder / "run.json"),
                   "--fail-on", "never"]
            colds.append(timed(run, folder, cache))
            if i == args.default_runs - 1:
                kernels = json.loads((folder / "run.json").read_text())["kernels"]
        (warm_s, warm_before, warm_after) = colds.pop()
    gate_seconds: dict[str, float] = {}
    for kernel in kernels:
        for gate, result in kernel["gates"].items():
            gate_seconds[gate] = gate_seconds.get(gate, 0.0) + result["seconds"]
    top = sorted(gate_seconds.items(), key=lambda item: -item[1])[:4]
    loads = "; ".join(f"{b:.1f} / {a:.1f}" for _, b, a in verifies)
    cold_loads = "; ".join(f"{b:.1f} / {a:.1f}" for _, b, a in colds)
    body = f"""## First commands: one verify, the default run (benchmarks/latency.py)

`python benchmarks/latency.py {' '.join(sys.argv[1:])}` on {machine()};
{time.strftime('%Y-%m-%d')}. Wall time of the whole command, interpreter start included.

- `{' '.join(verify)}` (ReLU, a Triton kernel through the interpreter, all twelve gates, the
  native check): median **{statistics.median(s for s, _, _ in verifies):.1f} s** of
  {len(verifies)} ({', '.join(f'{s:.1f}' for s, _, _ in verifies)} s; load before / after: {loads}).
- `kdiff run --bench kernelbench` (the shipped corpus on the CPU, {len(kernels)} kernels, one
  judge per core, a fresh store), with an empty resource cache as on a fresh machine: median
  **{statistics.median(s for s, _, _ in colds):.0f} s** of {len(colds)}
  ({', '.join(f'{s:.0f}' for s, _, _ in colds)} s; load before / after: {cold_loads});
  **{warm_s:.0f} s** run again with the cache the last one filled (load {warm_before:.1f} /
  {warm_after:.1f}). The last cold run's gates took {sum(gate_seconds.values()):.0f} judge-seconds,
  most in {', '.join(f'{g} {s:.0f} s' for g, s in top)}.
"""
    print(write_section("latency", body, args.out))


if __name__ == "__main__":
    sys.exit(main())
