"""The Markdown report: GitHub-flavoured tables, fit for `$GITHUB_STEP_SUMMARY`."""
from __future__ import annotations

import re
from pathlib import Path

from tabulate import tabulate

from kdiff import __version__
from kdiff.data.model import Verdict
from kdiff.differential.summary import breakdown, summarize
from kdiff.reports import tables
from kdiff.reports.rows import kernel_row, printable

# Characters that Markdown or the HTML it may hold would act on: escaped with a backslash
# (CommonMark's backslash escapes), so that text from a candidate shows as written. `_` is
# left alone: GitHub's Markdown does not emphasise inside words (level_1_problem_1), and
# elsewhere it can only italicise, never open a tag or leave the table.
MARKDOWN_SPECIAL = re.compile(r"([\\`*{}\[\]<>#|~&])")


def escape(text: object) -> str:
    """`text` as literal Markdown on one line: no control characters, nothing it could open
    or close (an HTML tag, a code span, emphasis, a table cell)."""
    return MARKDOWN_SPECIAL.sub(r"\\\1", printable(str(text))).replace("\n", "; ")


def _table(t: tables.Table) -> str:
    headers, rows = t
    return tabulate([[escape(c) for c in r] for r in rows], headers=headers,
                    tablefmt="github")


def render(verdicts: list[Verdict], bench: str, preset: str, device: str) -> str:
    summary = summarize(verdicts)
    rows = [kernel_row(v) for v in verdicts]
    out = [f"## kdiff: {bench}",
           f"kdiff {__version__}; native check `{preset}`; device `{device}`; "
           f"{len(verdicts)} kernel(s)",
           "### Native check against verifier", _table(tables.confusion(summary.confusion)),
           "\n".join(f"- {escape(line)}" for line in tables.findings(summary))]
    open_ = tables.undecided(verdicts).splitlines()
    if open_:
        out.append(f"**{escape(open_[0])}**\n\n" + "\n".join(f"- {escape(line.strip())}"
                                                           for line in open_[1:]))
    if summary.defects.gates:
        out += ["### Failures per gate", _table(tables.gates(summary.defects))]
    levels = breakdown(verdicts, "level")
    if len(levels) > 1:
        out += ["### By level", _table(tables.groups(levels, "level"))]
    out += ["### Kernels", _table(tables.kernels(rows, width=200))]
    details = [r for r in rows if r.message]
    if details:
        out.append("<details><summary>Details of failures and errors</summary>\n\n"
                   + "\n".join(f"- {escape(r.id)}: {escape(r.message)}" for r in details)
                   + "\n\n</details>")
    return "\n\n".join(out) + "\n"


def write(path: Path, verdicts: list[Verdict], bench: str, preset: str, device: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(verdicts, bench, preset, device))
