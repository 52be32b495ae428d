"""Figures and PNG curves from train.py's run folders.

Per family (runs under RUNS/<family>-<name>/ with name ours, ours-again, ref, ours-seed1):
  - non-finite steps of every run (must be none),
  - whether ours and ours-again logged bitwise identical losses,
  - the gap between ours and the reference (same seed) beside the run-to-run noise (ours at
    another seed), both as the largest difference of the losses smoothed over SMOOTH steps;
    the curves overlap within noise when the gap is no larger than the noise.
All three over the steps every run of the member logged (`common_steps`: runs stopped by a
time limit differ in length), and unjudged unless those steps pass the end of the warm-up by
a smoothing window: a reference that spent its time autotuning and logged a step or two says
nothing about the curve it did not draw, and during the warm-up all runs barely move.
Throughput (--throughput A B): the median tokens/s of two runs' summaries, side by side.

    python examples/train/compare.py --runs runs --out docs/training
"""
from __future__ import annotations

import argparse
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

SMOOTH = 20  # steps: a moving mean that averages the per-batch noise of byte windows
RUN_NAMES = ("ours", "ours-again", "ref", "ours-seed1")


@dataclass(frozen=True)
class FamilyFigures:
    family: str
    steps: dict            # run name -> steps logged
    common_steps: int      # the steps every run logged: identity, gap and noise are over these
    non_finite: dict       # run name -> steps whose loss or gradient was not finite
    bitwise_identical: bool | None
    gap_to_reference: float | None
    run_to_run_noise: float | None
    overlap_within_noise: bool | None
    held_out_step: int | None  # the last step at which every run was evaluated
    held_out: dict         # run name -> its held-out loss at that step


def records(folder: Path) -> list[dict]:
    log = folder / "log.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def smoothed(values: list[float]) -> list[float]:
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= SMOOTH:
            total -= values[i - SMOOTH]
        out.append(total / min(i + 1, SMOOTH))
    return out


def largest_gap(a: list[float], b: list[float]) -> float:
    gaps = [abs(x - y) for x, y in zip(smoothed(a), smoothed(b))]
    return math.nan if any(math.isnan(g) for g in gaps) else max(gaps)  # NaN: no overlap


def steps_to_judge(log: list[dict]) -> int:
    """More steps than this are needed to judge a comparison: the warm-up (up to the first
    step at the peak learning rate) and one smoothing window past it."""
    rates = [r.get("lr", math.inf) for r in log]
    return rates.index(max(rates)) + SMOOTH


def family_figures(runs: Path, family: str) -> tuple[FamilyFigures, dict]:
    logs = {name: records(runs / f"{family}-{name}") for name in RUN_NAMES}
    logs = {name: log for name, log in logs.items() if log}
    loss = {name: [r["loss"] for r in log] for name, log in logs.items()}
    common_steps = min(map(len, loss.values()), default=0)
    judged = "ours" in logs and common_steps > steps_to_judge(logs["ours"])

    def compared(other: str, measure):
        if not judged or other not in loss:
            return None
        return measure(loss["ours"][:common_steps], loss[other][:common_steps])

    bitwise = compared("ours-again", lambda a, b: a == b)
    gap = compared("ref", largest_gap)
    noise = compared("ours-seed1", largest_gap)
    # held-out losses at the last step every run evaluated (a run stopped by its time limit
    # evaluates at its last multiple of --eval-every, one stopped by --until at its end too)
    evals = {name: {r["step"]: r["held_out_loss"] for r in log if "held_out_loss" in r}
             for name, log in logs.items()}
    common = set.intersection(*(set(e) for e in evals.values())) if evals else set()
    held_step = max(common) if common else None
    held = {name: e.get(held_step) for name, e in evals.items()}
    figures = FamilyFigures(
        family=family, steps={name: len(log) for name, log in logs.items()},
        common_steps=common_steps,
        non_finite={name: [r["step"] for r in log
                           if not r["finite"] or not math.isfinite(r["loss"])]
                    for name, log in logs.items()},
        bitwise_identical=bitwise, gap_to_reference=gap, run_to_run_noise=noise,
        overlap_within_noise=None if gap is None or noise is None else gap <= noise,
        held_out_step=held_step, held_out=held)
    return figures, loss


def plot(curves: dict[str, dict[str, list[float]]], path: Path) -> None:
    fig, axes = plt.subplots(1, len(curves), figsize=(5 * len(curves), 4), squeeze=False)
    for ax, (family, loss) in zip(axes[0], curves.items()):
        for name, values in loss.items():
            ax.plot(smoothed(values), label=name, linewidth=1)
        ax.set_title(family)
        ax.set_xlabel("step")
        ax.set_ylabel(f"train loss (nats/byte, mean of {SMOOTH} steps)")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def throughput(a: Path, b: Path) -> dict:
    """Each run's median tokens/s over its logged steps after the first few (compilation,
    autotuning), as train.py's summary has it; read from the log, since a run killed while it
    wrote its last checkpoint has no summary."""
    from train import WARMUP_STEPS_EXCLUDED

    figures = {}
    for run in (a, b):
        log = records(run)
        rates = sorted(r["tokens_per_s"] for r in log[WARMUP_STEPS_EXCLUDED:])
        figures[str(run)] = {"steps": len(log),
                             "median_tokens_per_s": rates[len(rates) // 2] if rates else None}
    return figures


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--families", nargs="+", default=["gdn", "simple_gla", "gla", "kda", "mamba3"])
    p.add_argument("--throughput", type=Path, nargs=2, default=None)
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    report, curves = {"families": []}, {}
    for family in args.families:
        if not any((args.runs / f"{family}-{name}").exists() for name in RUN_NAMES):
            continue
        figures, loss = family_figures(args.runs, family)
        report["families"].append(asdict(figures))
        curves[family] = loss
    if curves:
        plot(curves, args.out / "family_curves.png")
    if args.throughput:
        report["throughput"] = throughput(*args.throughput)
        plot({"1.1B GDN": {str(run.name): [r["loss"] for r in records(run)]
                           for run in args.throughput}}, args.out / "gdn_1b_curves.png")
    (args.out / "figures.json").write_text(json.dumps(report, indent=1))
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
