"""The Markdown report: GitHub-flavoured tables, fit for `$GITHUB_STEP_SUMMARY`."""
from __future__ import annotations

from pathlib import Path

from tabulate import tabulate

from kdiff import __version__
from kdiff.differential.summary import breakdown, summarize
from kdiff.model import Verdict
from kdiff.reports import tables
from kdiff.reports.rows import kernel_row


def _table(t: tables.Table) -> str:
    headers, rows = t
    escaped = [[str(c).replace("|", "\\|").replace("\n", " ") for c in r] for r in rows]
    return tabulate(escaped, headers=headers, tablefmt="github")


def render(verdicts: list[Verdict], bench: str, preset: str, device: str) -> str:
    summary = summarize(verdicts)
    rows = [kernel_row(v) for v in verdicts]
    out = [f"## kdiff: {bench}",
           f"kdiff {__version__}; native check `{preset}`; device `{device}`; "
           f"{len(verdicts)} kernel(s)",
           "### Native check against verifier", _table(tables.confusion(summary.confusion)),
           "\n".join(f"- {line}" for line in tables.findings(summary))]
    if summary.defects.gates:
        out += ["### Failures per gate", _table(tables.gates(summary.defects))]
    levels = breakdown(verdicts, "level")
    if len(levels) > 1:
        out += ["### By level", _table(tables.groups(levels, "level"))]
    out += ["### Kernels", _table(tables.kernels(rows, width=200))]
    details = [r for r in rows if r.message]
    if details:
        out.append("<details><summary>Details of failures and errors</summary>\n\n"
                   + "\n".join(f"- `{r.id}`: " + r.message.replace("\n", "; ") for r in details)
                   + "\n\n</details>")
    return "\n\n".join(out) + "\n"


def write(path: Path, verdicts: list[Verdict], bench: str, preset: str, device: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(verdicts, bench, preset, device))
