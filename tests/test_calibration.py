"""Calibration as a test: every control passes every gate, no red-team kernel escapes a gate it
names, and each thresholded gate keeps at least REQUIRED_MARGIN between the largest honest
error and the smallest defective one. Reads the one judged corpus run (`corpus_run`)."""
from __future__ import annotations

import json
import math

import pytest

from kdiff.commands import calibrate as cal_mod
from kdiff.commands.calibrate import REQUIRED_MARGIN, calibration
from kdiff.commands.corpus import REFERENCES, shipped_kernels
from kdiff.data.model import Status
from kdiff.gates.registry import GATE_MODULES


@pytest.fixture(scope="module")
def cal(corpus_run):
    return calibration(corpus_run)


def test_every_control_and_reference_passes_every_gate(cal):
    rejected = [f"{j.id}: " + "; ".join(f"{gid} {r.status.value} {r.signature or ''} "
                                         f"{r.detail[:160]}" for gid, r in j.verdict.gates.items()
                                         if r.status in (Status.FAIL, Status.ERROR))
                for j in cal.rejected_controls]
    assert not rejected, "\n".join(rejected)


def test_no_red_team_kernel_escapes_a_gate_it_names(cal):
    missed = [m.describe() for m in cal.misses]
    assert not missed, "\n".join(missed)


def test_thresholded_gates_keep_the_margin(cal):
    thresholded = [g for g in cal.gates.values() if g.thresholded]
    assert thresholded
    for g in thresholded:
        assert g.honest, f"{g.gate}: no honest kernel was judged"
        assert g.defective, f"{g.gate}: no red-team kernel names it"
        noise, defect = g.honest_noise, g.smallest_defective
        assert g.margin is not None and g.margin >= REQUIRED_MARGIN, (
            f"{g.gate}: margin {g.margin}: honest {noise.ratio} ({noise.kernel}), defective "
            f"{defect.ratio if defect else None} ({defect.kernel if defect else '-'})")


def test_red_team_is_accepted_by_the_native_check(cal):
    rejected = [j.id for j in cal.redteam if j.verdict.native.accept is not True]
    assert not rejected, f"the native check ({cal_mod.PRESET}) rejects {rejected}"


def test_reference_as_its_own_candidate_passes_all_twelve_gates(cal):
    refs = [j for j in cal.honest if j.kernel.run == REFERENCES]
    assert refs
    for j in refs:
        assert set(j.verdict.gates) == {gid for gid, _ in GATE_MODULES}, j.id
        bad = {gid: (r.status.value, r.detail[:200]) for gid, r in j.verdict.gates.items()
               if r.status in (Status.FAIL, Status.ERROR)}
        assert not bad, f"{j.id}: {bad}"
        assert j.verdict.native.accept is True, j.id


def test_json_report_has_the_spec_fields(cal):
    data = json.loads(json.dumps(cal.to_json()))
    assert set(data["gates"]) == {gid for gid, _ in GATE_MODULES}
    for r in data["redteam"]:
        assert {"id", "expected_gates", "caught_by", "native_accept"} <= set(r)
    for c in data["controls"]:
        assert {"id", "verifier_accept"} <= set(c)


def test_kdiff_calibrate_writes_json_and_plot(corpus_run, monkeypatch, tmp_path, capsys):
    """The command's wiring, on the run already judged (judging again would double the
    suite's cost)."""
    from kdiff.commands.cli import main
    monkeypatch.setattr(cal_mod, "judge_corpus", lambda *a, **k: corpus_run)
    # One worker per red-team kernel and preset would cost minutes: the per-preset check is
    # tested on its own below.
    monkeypatch.setattr(cal_mod, "native_acceptance",
                        lambda kernel, presets, device: {p: None for p in presets})
    out_json, out_png = tmp_path / "cal.json", tmp_path / "cal.png"
    status = main(["calibrate", "--json", str(out_json), "--plot", str(out_png),
                   "--device", "cpu"])
    expected = 0 if calibration(corpus_run).ok else 1
    assert status == expected
    printed = capsys.readouterr().out
    assert "red-team recall" in printed and "controls' pass rate" in printed
    assert json.loads(out_json.read_text())["gates"]
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_infinite_defective_error_is_plotted_at_the_edge(cal, tmp_path):
    """A red-team kernel that raised or went non-finite has no finite error: it is drawn at
    the axis edge, and the margin it gives is infinite, not a crash."""
    infinite = [p for g in cal.gates.values() for p in g.defective
                if p.ratio is not None and math.isinf(p.ratio)]
    assert infinite  # the corpus has such kernels (the unstable softmax overflows)
    cal_mod.plot(cal, tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 0


def test_native_acceptance_per_preset():
    """The bf16 matmul gets through the 1e-2 checks (KernelBench v0.1, KernelGYM) and not
    through KernelBench's 1e-4."""
    kernel = next(k for k in shipped_kernels() if k.id == "redteam/level_1_problem_1_sample_1")
    assert cal_mod.native_acceptance(kernel, ["kernelbench", "kernelbench-v0.1", "kernelgym"],
                                     "cpu") == {"kernelbench": False, "kernelbench-v0.1": True,
                                                "kernelgym": True}
