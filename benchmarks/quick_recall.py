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
from dataclasses import dataclass
from pathlib import Path


def verdicts(path: Path) -> dict[str, dict]:
    return {k["id"]: k for k in json.loads(path.read_text())["kernels"]}


@dataclass
class Recall:
    """Of the kernels decided by both profiles: those the full verdict rejects, those of
    them quick rejects too, and those quick rejects that the full verdict accepts."""

    decided: list[str]
    rejected: list[str]
    caught: list[str]
    extra: list[str]

    @classmethod
    def of(cls, full: dict[str, bool | None], quick: dict[str, bool | None]) -> "Recall":
        """From each profile's verifier_accept by kernel id."""
        both = [k for k in full if full[k] is not None and quick.get(k) is not None]
        rejected = [k for k in both if full[k] is False]
        return cls(both, rejected, [k for k in rejected if quick[k] is False],
                   [k for k in both if full[k] and not quick[k]])

    @classmethod
    def pooled(cls, recalls: list["Recall"]) -> "Recall":
        return cls([k for r in recalls for k in r.decided], [k for r in recalls for k in r.rejected],
                   [k for r in recalls for k in r.caught], [k for r in recalls for k in r.extra])

    def describe(self) -> str:
        return f"{len(self.caught)}/{len(self.rejected)} = " \
               f"{len(self.caught) / max(len(self.rejected), 1):.1%}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("full", type=Path)
    ap.add_argument("quick", type=Path)
    args = ap.parse_args()
    full, quick = verdicts(args.full), verdicts(args.quick)
    recall = Recall.of({k: v["verifier_accept"] for k, v in full.items()},
                       {k: v["verifier_accept"] for k, v in quick.items()})
    print(f"kernels decided in both: {len(recall.decided)}; rejected by full: "
          f"{len(recall.rejected)}; also by quick: {len(recall.caught)}; recall "
          f"{recall.describe()}")
    print(f"rejected by quick, accepted by full: {len(recall.extra)} {recall.extra}")
    for k in sorted(set(recall.rejected) - set(recall.caught)):
        print(f"missed by quick: {k} (full: {', '.join(full[k]['gates'][g]['signature'] or g for g in full[k]['gates'] if full[k]['gates'][g]['status'] == 'fail')})")


if __name__ == "__main__":
    main()
