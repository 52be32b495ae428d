"""JUnit XML: one testcase per kernel. A verifier rejection is a <failure> carrying the
failing gates' signatures; a kernel that could not be judged is an <error>. Provenance is a
property; with `require_own_kernel`, a kernel not seen running a kernel of its own is a
<failure> of type `provenance`."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from kdiff.data.model import Verdict
from kdiff.reports.rows import kernel_row, printable


def _provenance_failure(v: Verdict, require_own_kernel: bool) -> bool:
    return require_own_kernel and v.provenance is not None \
        and not v.provenance.shows_own_kernel


def element(verdicts: list[Verdict], bench: str, require_own_kernel: bool = False
            ) -> ET.Element:
    rows = [kernel_row(v) for v in verdicts]
    suite = ET.Element("testsuite", name=f"kdiff.{bench}", tests=str(len(rows)),
                       failures=str(sum(r.status == "reject" or (
                           r.status != "error" and _provenance_failure(v, require_own_kernel))
                           for v, r in zip(verdicts, rows))),
                       errors=str(sum(r.status == "error" for r in rows)), skipped="0",
                       time=f"{sum(g.seconds for v in verdicts for g in v.gates.values()):.3f}")
    for v, r in zip(verdicts, rows):
        case = ET.SubElement(suite, "testcase", classname=f"{bench}.{r.run or r.problem}",
                             name=r.id,
                             time=f"{sum(g.seconds for g in v.gates.values()):.3f}")
        props = ET.SubElement(case, "properties")
        for name, value in (("native", r.native), ("recorded", r.recorded),
                            ("verifier", r.verifier), ("agreement", r.agreement),
                            ("provenance", r.provenance),
                            ("problem", str(v.case.problem)),
                            ("candidate", str(v.case.candidate))):
            ET.SubElement(props, "property", name=name, value=value)
        if r.status == "reject":
            failure = ET.SubElement(case, "failure", type="verifier_reject",
                                    message=r.failure_text or "rejected")
            failure.text = r.message
        elif r.status == "error":
            error = ET.SubElement(case, "error", type=v.error_kind if v.error else "gate_error",
                                  message=(r.message.splitlines() or ["verdict open"])[0])
            error.text = r.message
        elif _provenance_failure(v, require_own_kernel):
            failure = ET.SubElement(case, "failure", type="provenance",
                                    message=f"provenance {r.provenance}")
            failure.text = printable(v.provenance.detail)
    return suite


def write(path: Path, verdicts: list[Verdict], bench: str, require_own_kernel: bool = False
          ) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tree = ET.ElementTree(ET.Element("testsuites"))
    tree.getroot().append(element(verdicts, bench, require_own_kernel))
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)
