"""Write an honest corpus from a KernelBench checkout: every problem's reference submitted as
its own candidate, compiled with torch.compile (inductor: Triton kernels on CUDA, C++ on the
CPU) and plain, in KernelBench's runs layout, so that `kdiff run` judges it. Every kernel in it
is honest: any rejection is either a real property of the reference (written up in the docs)
or a mistake of kdiff's.

    python benchmarks/honest_corpus.py --root KB --out KB/runs/honest [--levels 1 2]
    kdiff run --bench kernelbench --root KB --runs KB/runs/honest --device cuda \\
        --max-elements 4194304 --json honest.json

Samples: 0 is the torch.compile'd reference, 1 the reference as it is. The candidate is a
copy of the problem's source (as a generated kernel copies what it needs), with `ModelNew` a
subclass of `Model`: built after the same seed from the same init inputs, it draws the same
parameters, as the benchmark's harness expects of a candidate.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

PROBLEM_FILE = re.compile(r"(\d+)_(.+)\.py")

VARIANTS = {
    0: ("torch.compile'd reference", '''

class ModelNew(Model):
    """The reference, compiled by torch.compile (inductor)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._compiled = torch.compile(super().forward)

    def forward(self, *args):
        return self._compiled(*args)
'''),
    1: ("plain reference", '''

class ModelNew(Model):
    """The reference itself."""
'''),
}


def candidate_source(problem: Path, sample: int) -> str:
    what, tail = VARIANTS[sample]
    header = (f'"""\nkdiff-control: {what} of {problem.parent.name}/{problem.name} '
              f'(benchmarks/honest_corpus.py)\n"""\n')
    body = problem.read_text()
    if not re.search(r"^import torch\b", body, re.M):
        body = "import torch\n" + body
    return header + body + tail


def problems(root: Path, levels: list[int], only: set[int] | None) -> list[tuple[int, int, Path]]:
    found = []
    for level in levels:
        folder = root / "KernelBench" / f"level{level}"
        if not folder.is_dir():
            sys.exit(f"{folder}: no such folder (pass --root KERNELBENCH_CHECKOUT)")
        for path in sorted(folder.glob("*.py")):
            m = PROBLEM_FILE.fullmatch(path.name)
            if m and (only is None or int(m.group(1)) in only):
                found.append((level, int(m.group(1)), path))
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, required=True, help="KernelBench checkout")
    ap.add_argument("--out", type=Path, required=True, help="runs folder to write")
    ap.add_argument("--levels", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--problems", type=int, nargs="+", help="only these problem numbers")
    ap.add_argument("--samples", type=int, nargs="+", default=sorted(VARIANTS),
                    choices=sorted(VARIANTS), help="0: torch.compile'd, 1: plain")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    written = 0
    for level, pid, path in problems(args.root, args.levels,
                                     set(args.problems) if args.problems else None):
        for sample in args.samples:
            target = args.out / f"level_{level}_problem_{pid}_sample_{sample}_kernel.py"
            target.write_text(candidate_source(path, sample))
            written += 1
    print(f"{written} candidates in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
