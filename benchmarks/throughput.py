"""Kernels judged per minute with 1 and N jobs, the results store's cost per verdict, and a
worker's start, warm (forked from the zygote) and cold (a fresh interpreter).

Each throughput run is the real command, `kdiff run`, into a fresh store (nothing resumed);
the verdicts of the runs are checked equal (seconds aside). Writes its section of
benchmarks/RESULTS.md (between its markers) with the command and the machine.

    python benchmarks/throughput.py --problems 19 --jobs 1,2
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

from kdiff.data.model import Case, GateResult, NativeVerdict, Status, Verdict
from kdiff.judging.runconfig import RunConfig
from kdiff.sandbox.process import CandidateProcess, SandboxLimits
from kdiff.verdicts.store import ResultsStore

ROOT = Path(__file__).resolve().parent.parent
GATES = ["EXC-01", "EXC-02", "ORD-02", "RES-01", "RES-02", "CMP-01", "CMP-02", "CMP-03",
         "ORD-01", "PRC-01", "PRC-02", "PRC-03"]


def store_cost(folder: Path, n: int) -> dict[str, float]:
    """Milliseconds per verdict (twelve gate rows) to store it, and to look it up on resume."""
    problem = folder / "p.py"
    problem.write_text("# problem\n")
    config = RunConfig()
    cases, verdicts = [], []
    for i in range(n):
        path = folder / f"c{i}.py"
        path.write_text(f"# candidate {i}\n")
        case = Case(id=f"k{i}", problem=problem, candidate=path)
        gates = {g: GateResult(g, Status.PASS, None, "d" * 120, 0.25, 1.0) for g in GATES}
        cases.append(case)
        verdicts.append(Verdict(case, NativeVerdict(True, "kernelbench", reason="5/5"), gates))
    with ResultsStore(folder / "cost.sqlite") as store:
        start = time.perf_counter()
        for case, verdict in zip(cases, verdicts):
            store.put(case, config, "kernelbench", verdict)
        put = (time.perf_counter() - start) / n
        start = time.perf_counter()
        for case in cases:
            store.get(case, config, "kernelbench", GATES)
        get = (time.perf_counter() - start) / n
    return {"put_ms": put * 1e3, "get_ms": get * 1e3, "n": n}


def worker_start(problem: Path, candidate: Path, warm: bool, n: int) -> list[float]:
    """Seconds from nothing to the worker's first answer (import of the candidate included).
    The first warm start also pays for the zygote; it is reported apart."""
    out = []
    for _ in range(n):
        start = time.perf_counter()
        with CandidateProcess(problem, candidate, limits=SandboxLimits(warm_start=warm)) as c:
            c.request("forget")
        out.append(time.perf_counter() - start)
    return out


def timeless(report: Path) -> list[dict]:
    kernels = json.loads(report.read_text())["kernels"]
    for k in kernels:
        for timed in (k["native"], *k["gates"].values()):
            timed.pop("seconds", None)
    return kernels


def throughput(folder: Path, problems: str, gates: str | None, jobs: int) -> dict:
    command = ["kdiff", "run", "--bench", "kernelbench", "--device", "cpu", "--problems",
               problems, "--jobs", str(jobs), "--store", str(folder / f"jobs{jobs}.sqlite"),
               "--json", str(folder / f"jobs{jobs}.json"), "--fail-on", "never"]
    if gates:
        command += ["--gates", gates]
    load = os.getloadavg()[0]
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    n = len(json.loads((folder / f"jobs{jobs}.json").read_text())["kernels"])
    return {"jobs": jobs, "kernels": n, "seconds": seconds, "per_minute": 60 * n / seconds,
            "load_before": load, "load_after": os.getloadavg()[0],
            "command": " ".join(command[:command.index("--store")] + command[
                command.index("--fail-on"):]), "report": folder / f"jobs{jobs}.json"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", default="19", help="corpus problems to judge")
    parser.add_argument("--gates", default=None, help="gates (default: all twelve)")
    parser.add_argument("--jobs", default="1,2")
    parser.add_argument("--store-verdicts", type=int, default=500)
    parser.add_argument("--starts", type=int, default=4)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kdiff-throughput-") as tmp:
        folder = Path(tmp)
        cost = store_cost(folder, args.store_verdicts)
        problem = ROOT / "tests" / "hostile" / "problem.py"
        honest = ROOT / "tests" / "hostile" / "honest.py"
        cold = worker_start(problem, honest, warm=False, n=args.starts)
        warm = worker_start(problem, honest, warm=True, n=args.starts + 1)
        runs = [throughput(folder, args.problems, args.gates, int(j))
                for j in args.jobs.split(",")]
        same = all(timeless(r["report"]) == timeless(runs[0]["report"]) for r in runs)
    overhead = cost["put_ms"] / 1e3 / (runs[0]["seconds"] / runs[0]["kernels"])
    rows = "\n".join(f"| {r['jobs']} | {r['kernels']} | {r['seconds']:.1f} | "
                     f"{r['per_minute']:.2f} | {r['load_before']:.1f} / {r['load_after']:.1f} |"
                     for r in runs)
    body = f"""## Throughput, store and worker start (benchmarks/throughput.py)

`python benchmarks/throughput.py {' '.join(sys.argv[1:])}` on {machine()};
{time.strftime('%Y-%m-%d')}. The machine was shared: the load average (1 min)
before and after each run is in the table, and on 2 cores anything above 2 slows every
number here in proportion.

Kernels judged per minute, CPU, gates {args.gates or 'all twelve'}, the real command
(`{runs[0]['command']}`), a fresh store each time; the verdicts of the runs are
{'identical' if same else 'NOT identical'} (seconds aside):

| jobs | kernels | seconds | kernels per minute | load before / after |
|---|---|---|---|---|
{rows}

Results store (SQLite, WAL, synchronous=NORMAL, one transaction per verdict), a verdict of
twelve gate rows, {cost['n']} verdicts: **{cost['put_ms']:.2f} ms** to store one,
**{cost['get_ms']:.2f} ms** to look one up when resuming: {overhead:.1e} of the time one
kernel took to judge with one job above.

Worker start, to its first answer (candidate imported, confined): cold (a fresh interpreter
importing torch and Triton) median **{statistics.median(cold):.2f} s** (of {len(cold)});
warm (forked from the zygote) median **{statistics.median(warm[1:]):.3f} s** (of
{len(warm) - 1}), after a first start of {warm[0]:.2f} s that starts the zygote itself.
"""
    print(write_section("throughput", body, args.out))


if __name__ == "__main__":
    sys.exit(main())
