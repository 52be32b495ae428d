"""The differential engine's arithmetic, against values worked out by hand."""
from __future__ import annotations

from pathlib import Path

import pytest

from kdiff.data.model import Case, GateClass, GateResult, NativeVerdict, Status, Verdict
from kdiff.differential.confusion import confusion
from kdiff.differential.defects import defects
from kdiff.differential.disagreement import disagreement
from kdiff.differential.stats import mcnemar_exact, wilson
from kdiff.differential.summary import breakdown, summarize

CLASSES = {"EXC-01": GateClass.TOLERANCE_FREE, "ORD-02": GateClass.TOLERANCE_FREE,
           "CMP-01": GateClass.THRESHOLDED}


def verdict(name: str, native: bool | None, fails: dict[str, str | None] = (),
            level: int = 1, error: str | None = None, error_kind: str = "problem") -> Verdict:
    gates = {g: GateResult(g, Status.PASS) for g in CLASSES}
    for g, sig in dict(fails).items():
        gates[g] = GateResult(g, Status.FAIL, sig)
    case = Case(id=name, problem=Path(f"KernelBench/level{level}/{name}.py"),
                candidate=Path(f"{name}_kernel.py"), metadata={"level": level})
    return Verdict(case, NativeVerdict(native, "kernelbench"), {} if error else gates,
                   error=error, error_kind=error_kind)


@pytest.mark.parametrize("b, c, p", [
    (0, 0, 1.0),
    (1, 0, 1.0),  # 2 * C(1,0) / 2^1
    (10, 0, 2 / 1024),  # 2 * C(10,0) / 2^10
    (8, 1, 20 / 512),  # 2 * (C(9,0) + C(9,1)) / 2^9 = 2 * 10 / 512
    (2, 6, 74 / 256),  # 2 * (1 + 8 + 28) / 2^8, symmetric in b and c
    (5, 5, 1.0),  # 2 * 638 / 1024 > 1: capped
])
def test_mcnemar_exact_against_hand_computed_values(b, c, p):
    assert mcnemar_exact(b, c) == pytest.approx(p, rel=1e-12)
    assert mcnemar_exact(c, b) == pytest.approx(p, rel=1e-12)


def test_mcnemar_exact_stays_exact_for_large_counts():
    # 2 * (1 + 2000) / 2^2000 underflows to 0.0 in float; must not raise or go negative.
    assert 0.0 <= mcnemar_exact(1999, 1) < 1e-300


@pytest.mark.parametrize("k, n, low, high", [
    # Worked by hand from (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n), z = 1.95996:
    (0, 10, 0.0, 0.27753),  # centre = half = 0.192073; high = 0.384146 / 1.384146
    (5, 10, 0.23659, 0.76341),  # centre 0.692073, half 0.364576, denominator 1.384146
    (10, 10, 0.72247, 1.0),
    (1, 5, 0.03622, 0.62447),  # centre 0.584146, half 0.520093, denominator 1.768292
])
def test_wilson_interval_against_hand_computed_values(k, n, low, high):
    rate = wilson(k, n)
    assert rate.low == pytest.approx(low, abs=1e-5)
    assert rate.high == pytest.approx(high, abs=1e-5)
    assert rate.value == k / n


def test_wilson_of_nothing_is_open_and_bad_counts_are_refused():
    assert wilson(0, 0).value is None and wilson(0, 0).low is None
    with pytest.raises(ValueError):
        wilson(3, 2)


def test_confusion_counts_percentages_and_disagreement():
    vs = [verdict("a", True), verdict("b", True, {"EXC-01": "nan_swallowed"}),
          verdict("c", True, {"CMP-01": "mismatch"}), verdict("d", False),
          verdict("e", False, {"ORD-02": "nondeterministic"}),
          verdict("f", None), verdict("g", True, error="broken problem")]
    table = confusion(vs)
    assert (table.both_accept, table.native_only, table.verifier_only, table.both_reject,
            table.undecided) == (1, 2, 1, 1, 2)
    assert table.decided == 5
    assert table.percentages() == {"both_accept": 20.0, "native_only": 40.0,
                                   "verifier_only": 20.0, "both_reject": 20.0}
    d = disagreement(table)
    assert d.mcnemar_p == pytest.approx(1.0)  # 2 * (C(3,0) + C(3,1)) / 8 = 1
    assert (d.rejected_of_native_accepted.k, d.rejected_of_native_accepted.n) == (2, 3)
    assert (d.one_directional.k, d.one_directional.n) == (2, 3)
    assert (d.native_only_rate.k, d.native_only_rate.n) == (2, 5)


def test_defects_per_gate_shares_and_modal_defect():
    vs = [verdict("a", True, {"EXC-01": "nan_swallowed"}),
          verdict("b", True, {"EXC-01": "nan_swallowed", "CMP-01": "mismatch"}),
          verdict("c", True, {"CMP-01": "mismatch"}),
          verdict("d", False, {"EXC-01": "nan_swallowed"}),
          verdict("e", True),
          verdict("f", False, error="does not import", error_kind="candidate")]
    found = defects(vs, CLASSES)
    tallies = {t.gate: t for t in found.gates}
    assert [t.gate for t in found.gates] == ["EXC-01", "ORD-02", "CMP-01"]  # catalogue order
    assert (tallies["EXC-01"].judged, tallies["EXC-01"].failed,
            tallies["EXC-01"].failed_native_accepted) == (5, 3, 2)
    assert tallies["EXC-01"].signatures == {"nan_swallowed": 3}
    assert (tallies["CMP-01"].failed, tallies["ORD-02"].failed) == (2, 0)
    # Denominators: the 5 kernels the gates judged (f never ran), 4 of them native-accepted.
    assert (found.any_gate.k, found.any_gate.n) == (4, 5)
    assert (found.tolerance_free.k, found.tolerance_free.n) == (3, 5)
    assert (found.any_gate_native_accepted.k, found.any_gate_native_accepted.n) == (3, 4)
    assert (found.tolerance_free_native_accepted.k,
            found.tolerance_free_native_accepted.n) == (2, 4)
    assert found.modal.label == "EXC-01=nan_swallowed" and found.modal.count == 3
    # Among native-accepted, CMP-01=mismatch and EXC-01=nan_swallowed tie at 2: by gate id.
    assert found.modal_native_accepted.label == "CMP-01=mismatch"


def test_breakdown_by_level_and_problem():
    vs = [verdict("a", True, {"EXC-01": "nan_swallowed"}, level=1), verdict("b", True, level=1),
          verdict("c", True, level=2)]
    levels = breakdown(vs, "level", CLASSES)
    assert list(levels) == ["level 1", "level 2"]
    assert levels["level 1"].confusion.native_only == 1 and levels["level 1"].kernels == 2
    assert levels["level 2"].confusion.both_accept == 1
    assert levels["level 2"].defects.modal is None
    assert set(breakdown(vs, "problem", CLASSES)) == {"a", "b", "c"}
    s = summarize(vs, CLASSES).to_json()
    assert s["confusion"]["native_only"] == 1 and s["defects"]["modal"]["gate"] == "EXC-01"
