"""The quick profile's recall against the full verdict: of the kernels the full twelve gates
reject, the share `--profile quick` rejects too (and whether quick rejects any kernel full
accepts, which it cannot unless a shared gate's verdict changed). Reads the JSON reports of
the same run in both profiles:

    kdiff run --bench kernelbench --json full.json --fail-on never
    kdiff run --bench kernelbench --profile quick --json quick.json --fail-on never
    python benchmarks/quick_recall.py full.json quick.json
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path


def verdicts(path: Path) -> dict[str, dict]:
    return {k["id"]: k for k in json.loads(path.read_text())["kernels"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("full", type=Path)
    ap.add_argument("quick", type=Path)
    args = ap.parse_args()
    full, quick = verdicts(args.full), verdicts(args.quick)
    both = [k for k in full if k in quick and full[k]["verifier_accept"] is not None
            and quick[k]["verifier_accept"] is not None]
    rejected = [k for k in both if full[k]["verifier_accept"] is False]
    caught = [k for k in rejected if quick[k]["verifier_accept"] is False]
    missed = sorted(set(rejected) - set(caught))
    extra = [k for k in both if full[k]["verifier_accept"] and not quick[k]["verifier_accept"]]
    print(f"kernels decided in both: {len(both)}; rejected by full: {len(rejected)}; "
          f"also by quick: {len(caught)}; recall {len(caught) / max(len(rejected), 1):.1%}")
    print(f"rejected by quick, accepted by full: {len(extra)} {extra}")
    for k in missed:
        print(f"missed by quick: {k} (full: {', '.join(full[k]['gates'][g]['signature'] or g for g in full[k]['gates'] if full[k]['gates'][g]['status'] == 'fail')})")


if __name__ == "__main__":
    main()
