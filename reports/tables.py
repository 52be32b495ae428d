"""The run's tables as (headers, rows), so that the terminal and Markdown renderers lay out
the same content with different table formats."""
from __future__ import annotations

from kdiff.data.model import Verdict
from kdiff.differential.confusion import Confusion
from kdiff.differential.defects import Defects
from kdiff.differential.summary import Summary
from kdiff.reports.rows import KernelRow, kernel_row

Table = tuple[list[str], list[list[object]]]


def _cell(n: int, pct: float | None) -> str:
    return f"{n} ({pct:.1f}%)" if pct is not None else str(n)


def kernels(rows: list[KernelRow], width: int = 70) -> Table:
    out = []
    for r in rows:
        found = r.failure_text or (f"error: {r.message}" if r.status == "error" else "")
        if len(found) > width:
            found = found[: width - 3] + "..."
        out.append([r.id, r.native, r.recorded, r.verifier, r.agreement, r.provenance, found])
    return (["kernel", "native", "recorded", "verifier", "agreement", "provenance",
             "failing gates"], out)


def confusion(table: Confusion) -> Table:
    pct = table.percentages()
    return (["", "verifier accept", "verifier reject"],
            [["native accept", _cell(table.both_accept, pct["both_accept"]),
              _cell(table.native_only, pct["native_only"])],
             ["native reject", _cell(table.verifier_only, pct["verifier_only"]),
              _cell(table.both_reject, pct["both_reject"])]])


def gates(found: Defects) -> Table:
    rows = [[t.gate, t.klass or "?", t.judged, t.failed, t.failed_native_accepted,
             ", ".join(f"{sig or '-'} x{n}" for sig, n in sorted(t.signatures.items()))]
            for t in found.gates]
    return ["gate", "class", "judged", "failed", "failed & native accept", "signatures"], rows


def groups(summaries: dict[str, Summary], label: str) -> Table:
    rows = []
    for name, s in summaries.items():
        c = s.confusion
        modal = s.defects.modal
        rows.append([name, s.kernels, c.both_accept, c.native_only, c.verifier_only,
                     c.both_reject, s.errors, f"{modal.label} x{modal.count}" if modal else ""])
    return ([label, "kernels", "both accept", "native only", "verifier only", "both reject",
             "errors", "modal defect"], rows)


def findings(s: Summary) -> list[str]:
    """The headline numbers, one sentence each."""
    d, f = s.disagreement, s.defects
    lines = [f"decided {s.confusion.decided} of {s.kernels} kernels; {s.errors} error row(s), "
             f"{s.confusion.undecided} undecided",
             f"disagreement: native only {d.native_only}, verifier only {d.verifier_only}; "
             f"exact McNemar p = {d.mcnemar_p:.3g}",
             f"verifier rejects of native-accepted kernels: "
             f"{d.rejected_of_native_accepted.describe()}",
             f"native-only share of the disagreement: {d.one_directional.describe()}",
             f"kernels failing >= 1 gate: {f.any_gate.describe()}; >= 1 tolerance-free gate: "
             f"{f.tolerance_free.describe()}",
             f"native-accepted kernels failing >= 1 gate: "
             f"{f.any_gate_native_accepted.describe()}; >= 1 tolerance-free gate: "
             f"{f.tolerance_free_native_accepted.describe()}"]
    lines.append(s.provenance.describe())
    if f.modal:
        lines.append(f"modal defect: {f.modal.label} ({f.modal.count} kernel(s))"
                     + (f"; among native-accepted: {f.modal_native_accepted.label} "
                        f"({f.modal_native_accepted.count})" if f.modal_native_accepted else ""))
    return lines


def undecided(verdicts: list[Verdict]) -> str:
    """The kernels left undecided (n/a), each with its reason: they fail --fail-on violation
    unless --undecided-ok."""
    rows = [kernel_row(v) for v in verdicts if v.verifier_accept is None]
    if not rows:
        return ""
    return "\n".join([f"undecided (n/a), {len(rows)} kernel(s), counted as violations unless "
                      "--undecided-ok:"]
                     + [f"  {r.id}: {(r.message.splitlines() or ['verdict open'])[0]}"
                        for r in rows])
