"""`kdiff calibrate`'s outputs on hand-made measurements (no judging): the plot's axis keeps
the region near the bound readable whatever the outliers, and the JSON is strict."""
from __future__ import annotations

import json
import math

from kdiff.commands import calibrate as cal_mod
from kdiff.commands.calibrate import (
    REQUIRED_MARGIN,
    Calibration,
    CorpusRun,
    GateCalibration,
    Point,
    axis_range,
)
from kdiff.data.model import GateClass, Status


def _gate(gid: str, honest: list[float], defective: list[float]) -> GateCalibration:
    g = GateCalibration(gid, gid.lower(), GateClass.THRESHOLDED)
    g.honest = [Point(f"h{i}", r, Status.PASS) for i, r in enumerate(honest)]
    g.defective = [Point(f"d{i}", r, Status.FAIL, "exceeds_bound")
                   for i, r in enumerate(defective)]
    return g


def test_huge_and_infinite_errors_do_not_stretch_the_axis():
    """A defective error of 1e40 (or inf) beside the smallest one of 6: the axis stops a
    decade past the errors that decide a margin, not at 1e41."""
    gates = [_gate("PRC-01", [0.05, 1e-9, 0.0], [6.0, 1e40, math.inf]),
             _gate("CMP-01", [0.2], [30.0, 1e25])]
    lo, hi = axis_range(gates)
    # smallest defective errors 6 and 30 -> largest 30 -> a decade above its decade: 1e3;
    # largest honest errors 0.05 and 0.2 -> smallest 0.05 -> a decade below: 1e-3
    assert (lo, hi) == (1e-3, 1e3)
    assert lo <= 1 / REQUIRED_MARGIN and hi >= REQUIRED_MARGIN


def test_the_bounds_required_room_is_always_on_the_axis():
    lo, hi = axis_range([_gate("PRC-01", [0.0], [math.inf])])  # exact honest, raised defect
    assert lo < 1 / REQUIRED_MARGIN and hi > REQUIRED_MARGIN


def test_plot_draws_outliers_at_the_edge(tmp_path, monkeypatch):
    cal = Calibration(CorpusRun("cpu", ["PRC-01"], [], [], 1.0),
                      {"PRC-01": _gate("PRC-01", [0.05], [6.0, 1e40, math.inf])}, [], [])
    drawn = []
    import matplotlib.axes
    original = matplotlib.axes.Axes.scatter

    def scatter(self, x, y, *args, **kwargs):
        drawn.append(x[0])
        return original(self, x, y, *args, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "scatter", scatter)
    cal_mod.plot(cal, tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
    assert max(drawn) == 100.0  # 1e40 and inf at the right edge (a decade past 6)


def test_calibration_json_is_strict():
    from kdiff.reports.json_report import dumps
    cal = Calibration(CorpusRun("cpu", ["PRC-01"], [], [], 1.0),
                      {"PRC-01": _gate("PRC-01", [0.0], [math.inf])}, [], [])

    def refuse(constant: str) -> None:
        raise ValueError(constant)
    data = json.loads(dumps(cal.to_json()), parse_constant=refuse)
    assert data["gates"]["PRC-01"]["smallest_defective"] == "inf"
    assert data["gates"]["PRC-01"]["margin"] == "inf"


def test_calibrate_prints_its_header_before_judging(monkeypatch, capsys, tmp_path):
    from kdiff.commands.cli import main
    seen = []

    def judge_corpus(device, jobs, progress):
        seen.append(capsys.readouterr().err)
        return CorpusRun(device, ["PRC-01"], [], [], 0.0)

    monkeypatch.setattr(cal_mod, "judge_corpus", judge_corpus)
    assert main(["calibrate", "--device", "cpu", "--jobs", "1"]) == 0
    header, status = seen[0].splitlines()[:2]
    assert header.startswith("kdiff calibrate: kernels ") and "native check kernelbench-v0.1 " \
        "(KernelBench v0/v0.1: 5 trials from seed 42, allclose atol=rtol=1e-2); device cpu; " \
        "judges 1 at once" in header
    assert status.endswith("0%] started 0s ago")
