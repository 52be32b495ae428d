"""Whether a change left every verdict of a run the same: reads the JSON reports of two runs of
one job (the same --chosen-seed, so that the chosen trials are drawn alike) and names each
kernel whose native check, verdict or error differs, and each gate whose status or signature
does; with --detail, whose detail does too (which also differs where a kernel is
nondeterministic, or in the resident memory RES-02 reports). Exits 1 where any differs.

    kdiff run --bench kernelbench --device cpu --chosen-seed 7 --json before.json --fail-on never
    (the change)
    kdiff run --bench kernelbench --device cpu --chosen-seed 7 --json after.json --fail-on never
    python benchmarks/same_verdicts.py before.json after.json
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from quick_recall import verdicts  # beside this script

KERNEL_FIELDS = ("native_accept", "verifier_accept", "error", "status")
GATE_FIELDS = ("status", "signature")


def differences(before: dict[str, dict], after: dict[str, dict],
                gate_fields: tuple[str, ...] = GATE_FIELDS) -> list[str]:
    """One line per kernel or gate field that differs, and per kernel judged in one run only."""
    lines = [f"{k}: only in {'before' if k in before else 'after'}"
             for k in sorted(before.keys() ^ after.keys())]
    for k in sorted(before.keys() & after.keys()):
        a, b = before[k], after[k]
        lines += [f"{k}: {f} {a.get(f)!r} -> {b.get(f)!r}"
                  for f in KERNEL_FIELDS if a.get(f) != b.get(f)]
        gates_a, gates_b = a.get("gates") or {}, b.get("gates") or {}
        for g in sorted(gates_a.keys() | gates_b.keys()):
            ga, gb = gates_a.get(g) or {}, gates_b.get(g) or {}
            lines += [f"{k} {g}: {f} {ga.get(f)!r} -> {gb.get(f)!r}"
                      for f in gate_fields if ga.get(f) != gb.get(f)]
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--detail", action="store_true", help="compare each gate's detail too")
    args = ap.parse_args()
    before, after = verdicts(args.before), verdicts(args.after)
    lines = differences(before, after, GATE_FIELDS + ("detail",) * args.detail)
    print("\n".join(lines))
    gates = sum(len(k.get("gates") or {}) for k in before.values())
    print(f"{len(before)} kernels, {gates} gate results: {len(lines)} difference(s)")
    sys.exit(1 if lines else 0)


if __name__ == "__main__":
    main()
