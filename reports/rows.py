"""One report row per verdict: the fields every renderer (terminal, Markdown, JUnit) shows,
worked out once."""
from __future__ import annotations

import re
from dataclasses import dataclass

from kdiff.data.model import Status, Verdict

# Terminal escape sequences (CSI, OSC, and two-character escapes) and the other control
# characters, which text from a candidate's exception may carry: no report renders them, and
# XML 1.0 (JUnit) forbids most of them outright.
_ESCAPES = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])")
# Beside them, what no encoder writes (a lone surrogate: UTF-8 refuses it, the terminal's print
# raised), what XML 1.0 excludes (the two noncharacters U+FFFE, U+FFFF), and Unicode's
# bidirectional controls (U+061C, U+200E/F, U+202A-E, U+2066-9), with which a report showed
# text in another order than it holds ("Trojan Source"): a right-to-left override before
# "tpecca :reifirev" in an exception's message showed "verifier: accept" in a failure's detail,
# and reorders whatever the line shows after it.
_CONTROL = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff"
    r"\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# The line and paragraph separators: line breaks to str.splitlines() and to some editors and
# viewers, which the renderers' handling of "\n" (a Markdown cell's "; ", the terminal's one
# line per reason) did not see: each becomes a "\n".
_SEPARATORS = re.compile(r"[\u2028\u2029]")


def printable(text: str) -> str:
    """`text` without terminal escapes, control characters, bidirectional controls and
    unencodable code points (newlines and tabs kept; Unicode's line separators as newlines)."""
    return _SEPARATORS.sub("\n", _CONTROL.sub("", _ESCAPES.sub("", text)))

ACCEPT = {True: "accept", False: "REJECT", None: "n/a"}
RECORDED = {True: "accept", False: "REJECT", None: "-"}  # "-": the harness recorded nothing


@dataclass
class KernelRow:
    id: str
    run: str
    problem: str
    native: str
    recorded: str
    verifier: str
    status: str  # accept | reject | error
    agreement: str  # agree | native only | verifier only | n/a
    failures: list[str]  # failing gates as GATE=signature
    message: str  # the error, else the failing gates' details, one line each
    provenance: str  # own | mixed (library N% of ...) | library-only | reference-call | n/a

    @property
    def failure_text(self) -> str:
        return ", ".join(self.failures)


def failure_labels(v: Verdict) -> list[str]:
    return [f"{gid}={g.signature}" if g.signature else gid
            for gid, g in v.gates.items() if gid in v.failed_gates]


def agreement(v: Verdict) -> str:
    n, k = v.native.accept, v.verifier_accept
    if n is None or k is None:
        return "n/a"
    if n == k:
        return "agree"
    return "native only" if n else "verifier only"


def _judged_by_nothing(v: Verdict) -> str:
    """Why no gate could judge v's outputs: the first gate that could not, and those that
    passed on how the candidate runs alone."""
    if not v.gates:
        return "no gate could judge it: none was selected"
    unjudged = [(gid, g) for gid, g in v.gates.items() if g.status is not Status.PASS]
    runs_only = [gid for gid, g in v.gates.items() if g.status is Status.PASS]
    parts = [f"{len(unjudged)} skipped or under-specified"] if unjudged else []
    if runs_only:
        parts.append(f"{', '.join(runs_only)} passed, on how it runs alone")
    if unjudged:
        gid, g = unjudged[0]
        parts.append(f"{gid}: {(g.detail.splitlines() or [''])[0]}")
    return f"no gate could judge it ({'; '.join(parts)})"


def kernel_row(v: Verdict) -> KernelRow:
    accept = v.verifier_accept
    status = "error" if v.error or accept is None else ("accept" if accept else "reject")
    if v.error:
        message = v.error
    elif v.judged_by_nothing:
        message = _judged_by_nothing(v)
    else:
        message = "\n".join(f"{gid}: {g.detail}" for gid, g in v.gates.items()
                            if gid in v.failed_gates or g.status.value == "error")
    message = printable(message)
    return KernelRow(id=printable(v.case.id), run=str(v.case.metadata.get("run", "")),
                     problem=str(v.case.metadata.get("problem") or v.case.problem.stem),
                     native=ACCEPT[v.native.accept], recorded=RECORDED[v.case.recorded_accept],
                     verifier=ACCEPT[accept], status=status, agreement=agreement(v),
                     failures=failure_labels(v), message=message,
                     provenance=printable(v.provenance.label()) if v.provenance else "n/a")
