"""What a person reads: one table per verdict, and gate listings."""
from __future__ import annotations

from tabulate import tabulate

from kdiff.model import Status, Verdict

MARK = {Status.PASS: "pass", Status.FAIL: "FAIL", Status.SKIP: "skip", Status.ERROR: "ERROR",
        Status.UNDER_SPECIFIED: "under-specified"}


def _accept(value: bool | None) -> str:
    return {True: "accept", False: "REJECT", None: "n/a"}[value]


def scaled_text(verdict: Verdict) -> str:
    """'judged at dim=12288 (benchmark 393216)', or '' at the benchmark's own sizes."""
    if not verdict.scaled_sizes:
        return ""
    return "judged at " + ", ".join(f"{n}={j} (benchmark {b})"
                                    for n, (b, j) in verdict.scaled_sizes.items())


def verdict_table(verdict: Verdict, gate_names: dict[str, str], width: int = 90) -> str:
    lines = [f"{verdict.case.id}", f"  problem:   {verdict.case.problem}",
             f"  candidate: {verdict.case.candidate}"]
    if verdict.scaled_sizes:
        lines.append(f"  sizes:     {scaled_text(verdict)}")
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


def run_report(verdicts: list[Verdict], bench: str, preset: str, device: str) -> str:
    """The summary of a whole run: one line per kernel, the 2x2 table, the disagreement
    statistics, failures per gate and the breakdown by level."""
    from kdiff.differential.summary import breakdown, summarize
    from kdiff.reports import tables
    from kdiff.reports.rows import kernel_row

    summary = summarize(verdicts)

    def table(t: tables.Table) -> str:
        return tabulate(t[1], headers=t[0], tablefmt="simple")

    sections = [f"kdiff run: bench {bench}, native check {preset}, device {device}, "
                f"{len(verdicts)} kernel(s)",
                table(tables.kernels([kernel_row(v) for v in verdicts])),
                "native check against verifier:\n" + table(tables.confusion(summary.confusion)),
                "\n".join(tables.findings(summary))]
    if summary.defects.gates:
        sections.append(table(tables.gates(summary.defects)))
    levels = breakdown(verdicts, "level")
    if len(levels) > 1:
        sections.append(table(tables.groups(levels, "level")))
    return "\n\n".join(sections)


def progress_line(done: int, total: int, elapsed: float, verdict: Verdict) -> str:
    """One line per finished kernel, for stderr on long runs."""
    from kdiff.reports.rows import kernel_row
    row = kernel_row(verdict)
    if row.status == "error":
        what = f"error: {row.message.splitlines()[0] if row.message else 'verdict open'}"
    else:
        what = (f"native {row.native}, verifier {row.verifier}"
                + (f" ({row.failure_text})" if row.failures else ""))
    if verdict.scaled_sizes:
        what += f"; {scaled_text(verdict)}"
    width = len(str(total))
    return f"[{done:>{width}}/{total} {elapsed:6.1f}s] {row.id}: {what}"
