"""How much of a library's Triton code RES-02 can compile from the judge's own reading
(kdiff.sandbox.kernel_source), without importing it: for every file under the given folders,
the jit functions the judge's module builds in any combination of the file's module-level
switches, against all the file defines, and the commonest reasons for the rest.

    python benchmarks/extraction_coverage.py /tmp/fla/fla      # fla-core 0.6.0: 506 of 565
"""
from __future__ import annotations

import argparse
import ast
import collections
import re
from pathlib import Path

from kdiff.sandbox.kernel_source import NotExtractable, extract, triton_kernel_names


def coverage(folder: Path) -> tuple[int, int, collections.Counter[str]]:
    built = total = 0
    reasons: collections.Counter[str] = collections.Counter()
    for path in sorted(folder.rglob("*.py")):
        source = path.read_bytes()
        try:
            names = triton_kernel_names(ast.parse(source))
        except (SyntaxError, ValueError):
            continue
        total += len(names)
        try:
            module = extract(source, str(path))
        except NotExtractable as exc:
            reasons[_reason(str(exc))] += len(names)
            continue
        made = set().union(*(kernels for _, kernels in module.variants()))
        built += len(names & made)
        refused = dict(module.refused)
        for name in names - made:
            reasons[_reason(refused.get(name, "defined below module level"))] += 1
    return built, total, reasons


def _reason(text: str) -> str:
    """A refusal without the names of the kernel and file it is about."""
    return re.sub(r"\b[\w./-]+\.py\b", "FILE", re.sub(r"^\w+: ", "", text))[:100]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--reasons", type=int, default=10, help="how many reasons to list")
    args = parser.parse_args()
    for folder in args.folders:
        built, total, reasons = coverage(folder)
        print(f"{folder}: {built} of {total} jit functions built")
        for reason, count in reasons.most_common(args.reasons):
            print(f"  {count:4d}  {reason}")


if __name__ == "__main__":
    main()
