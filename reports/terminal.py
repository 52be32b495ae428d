"""What a person reads: one table per verdict, and gate listings."""
from __future__ import annotations

import textwrap

from tabulate import tabulate

from kdiff.data.model import Status, Verdict
from kdiff.data.provenance import Provenance
from kdiff.reports.rows import kernel_row, printable

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


def _one_line(text: str) -> str:
    """A candidate's text (an exception's message) as one printable line: no line of its own
    can pass for one of the report's."""
    return " | ".join(line for line in printable(text).splitlines() if line.strip())


def verdict_table(verdict: Verdict, gate_names: dict[str, str], width: int = 90) -> str:
    lines = [f"{verdict.case.id}", f"  problem:   {verdict.case.problem}",
             f"  candidate: {verdict.case.candidate}"]
    if verdict.scaled_sizes:
        lines.append(f"  sizes:     {scaled_text(verdict)}")
    n = verdict.native
    lines.append(f"  native check ({n.preset}, {n.implementation}): {_accept(n.accept)}"
                 + (f" - {_one_line(n.reason)}" if n.reason else ""))
    if verdict.error:
        lines.append(f"  error: {_one_line(verdict.error)}")
    rows = []
    for gid, g in verdict.gates.items():
        detail = printable(g.detail).replace("\n", " ")
        detail = detail if len(detail) <= width else detail[: width - 3] + "..."
        rows.append([gid, gate_names.get(gid, ""), MARK[g.status], g.signature or "", detail])
    if rows:
        lines.append(tabulate(rows, headers=["gate", "name", "status", "signature", "detail"],
                              tablefmt="simple"))
    lines.append(f"  verifier: {_accept(verdict.verifier_accept)}")
    if verdict.provenance is not None:
        lines.append(f"  provenance: {provenance_text(verdict.provenance)}")
    return "\n".join(lines)


def provenance_text(p: Provenance, kernels: int = 4) -> str:
    """'mixed (library 67% of launches); touch_kernel (own, triton) x5, ...; detail'."""
    shown = ", ".join(f"{k.name} ({k.origin.value}, {k.source}) x{k.launches}"
                      + (f" {k.seconds * 1e3:.3g} ms" if k.seconds is not None else "")
                      for k in p.kernels[:kernels])
    more = f", {len(p.kernels) - kernels} more" if len(p.kernels) > kernels else ""
    parts = [p.label(), shown + more, *p.outstanding, p.detail]
    return printable("; ".join(x for x in parts if x))


def _explain_gate(gid: str, status: Status, signature: str | None, detail: str) -> list[str]:
    from kdiff.gates.registry import SIGNATURES
    known = SIGNATURES.get(signature or "")
    head = f"  {gid} {MARK[status]}" + (f" {signature}" if signature else "")
    if known is not None:
        head += f" ({known.meaning})"
    lines = [head]
    # A detail's clauses ("; ") each on their own lines: which trial, which output, how many
    # elements, the worst one's expected and got values against its bound.
    for clause in printable(detail).split("; "):
        lines += textwrap.wrap(clause, width=96, initial_indent="      ",
                               subsequent_indent="        ", break_on_hyphens=False,
                               break_long_words=False) or [""]
    return lines


def explanations(verdict: Verdict, verbose: bool = False) -> str:
    """Each failure in full, in the manner of torch.testing: which trial's inputs, which
    output, how many elements leave the bound, the worst one's index with its expected and
    got values and the bound; kdiff's own errors too. `verbose`: every gate, passes too."""
    lines = []
    if verdict.error:  # labelled by whose fault: the candidate's, the problem's, the judge's
        lines += _explain_gate(verdict.error_kind, Status.FAIL if verdict.error_kind ==
                               "candidate" else Status.ERROR, None, verdict.error)
    for gid, g in verdict.gates.items():
        if verbose or g.status in (Status.FAIL, Status.ERROR):
            lines += _explain_gate(gid, g.status, g.signature, g.detail)
    if (verdict.native.accept is False and verdict.native.reason
            and verdict.native.reason != verdict.error and (verbose or lines)):
        lines += _explain_gate("native", Status.FAIL, None, verdict.native.reason)
    return "\n".join([f"{verdict.case.id}:", *lines]) if lines else ""


def explain_run(verdicts: list[Verdict], verbose: bool, limit: int) -> str:
    """The explanations of the run's rejected and undecided kernels: the first `limit`
    unless `verbose`, which gives every kernel's, passes included."""
    chosen = [v for v in verdicts if verbose or v.verifier_accept is not True]
    if not chosen:
        return ""
    shown = chosen if verbose else chosen[:limit]
    parts = ["failures explained:" if not verbose else "every kernel explained:"]
    parts += [explanations(v, verbose) for v in shown]
    if len(shown) < len(chosen):
        parts.append(f"... and {len(chosen) - len(shown)} more kernel(s): -v shows all, the "
                     "reports hold every one")
    return "\n".join(p for p in parts if p)


def run_report(verdicts: list[Verdict], bench: str, preset: str, device: str) -> str:
    """The summary of a whole run: one line per kernel, the 2x2 table, the disagreement
    statistics, failures per gate and the breakdown by level."""
    from kdiff.differential.summary import breakdown, summarize
    from kdiff.reports import tables

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
    open_ = tables.undecided(verdicts)
    if open_:
        sections.append(open_)
    return "\n\n".join(sections)


def verdict_line(verdict: Verdict) -> str:
    """'<kernel>: native accept, verifier REJECT (EXC-01=nan_swallowed)', or its error."""
    row = kernel_row(verdict)
    if row.status == "error":
        what = f"error: {row.message.splitlines()[0] if row.message else 'verdict open'}"
    else:
        what = (f"native {row.native}, verifier {row.verifier}"
                + (f" ({row.failure_text})" if row.failures else ""))
    if verdict.provenance is not None:
        what += f"; provenance {row.provenance}"
    if verdict.scaled_sizes:
        what += f"; {scaled_text(verdict)}"
    return f"{row.id}: {what}"


def progress_line(done: int, total: int, elapsed: float, verdict: Verdict) -> str:
    """One line per finished kernel, for stderr on long runs."""
    width = len(str(total))
    return f"[{done:>{width}}/{total} {elapsed:6.1f}s] {verdict_line(verdict)}"
