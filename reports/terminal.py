"""What a person reads: one table per verdict, and gate listings."""
from __future__ import annotations

from tabulate import tabulate

from kdiff.model import Status, Verdict

MARK = {Status.PASS: "pass", Status.FAIL: "FAIL", Status.SKIP: "skip", Status.ERROR: "ERROR",
        Status.UNDER_SPECIFIED: "under-specified"}


def _accept(value: bool | None) -> str:
    return {True: "accept", False: "REJECT", None: "n/a"}[value]


def verdict_table(verdict: Verdict, gate_names: dict[str, str], width: int = 90) -> str:
    lines = [f"{verdict.case.id}", f"  problem:   {verdict.case.problem}",
             f"  candidate: {verdict.case.candidate}"]
    n = verdict.native
    lines.append(f"  native check ({n.preset}, {n.implementation}): {_accept(n.accept)}"
                 + (f" - {n.reason}" if n.reason else ""))
    if verdict.error:
        lines.append(f"  error: {verdict.error}")
    rows = []
    for gid, g in verdict.gates.items():
        detail = g.detail if len(g.detail) <= width else g.detail[: width - 3] + "..."
        rows.append([gid, gate_names.get(gid, ""), MARK[g.status], g.signature or "", detail])
    if rows:
        lines.append(tabulate(rows, headers=["gate", "name", "status", "signature", "detail"],
                              tablefmt="simple"))
    lines.append(f"  verifier: {_accept(verdict.verifier_accept)}")
    return "\n".join(lines)
