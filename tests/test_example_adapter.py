"""The example adapter of docs/contributing/adding-an-adapter.md, registered through pluggy
as an installed adapter would be, discovers its cases and judges them: the doc's example
cannot rot without this failing."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pluggy
import pytest

from kdiff.data.model import Status
from kdiff.judging import hookspecs, plugins
from kdiff.judging.runconfig import RunConfig
from kdiff.verdicts.judge import judge_case

EXAMPLE = (Path(__file__).resolve().parent.parent / "docs" / "contributing" / "example_adapter"
           / "kdiff_minibench.py")


@pytest.fixture(scope="module")
def manager() -> pluggy.PluginManager:
    spec = importlib.util.spec_from_file_location("kdiff_minibench", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    pm = pluggy.PluginManager("kdiff")
    pm.add_hookspecs(hookspecs)
    pm.register(module, name="minibench")
    return pm


def cases(pm: pluggy.PluginManager, config: RunConfig) -> dict:
    return {case.id: case for case in pm.hook.kdiff_discover(bench="minibench", config=config)}


def test_the_example_adapter_serves_its_bench(manager):
    assert "minibench" in plugins.benches(manager)
    assert manager.hook.kdiff_native_presets(bench="minibench") == ["minibench"]
    assert manager.hook.kdiff_native_presets(bench="kernelbench") is None  # not its bench
    assert set(cases(manager, RunConfig(bench="minibench"))) == {"relu/clamp", "relu/where"}
    assert cases(manager, RunConfig(bench="minibench", problems=["nothing*"])) == {}


def test_the_example_adapter_judges_a_pass_and_a_nan_swallowing_fail(manager):
    config = RunConfig(bench="minibench", gates=["EXC-01"])
    found = cases(manager, config)
    honest = judge_case(found["relu/clamp"], config, manager)
    assert honest.native.accept and honest.native.preset == "minibench"
    assert honest.verifier_accept, honest.gates
    swallows = judge_case(found["relu/where"], config, manager)
    assert swallows.native.accept  # no NaN among the bench's inputs: its check cannot see it
    result = swallows.gates["EXC-01"]
    assert (result.status, result.signature) == (Status.FAIL, "nan_swallowed")
    assert swallows.verifier_accept is False


def test_a_reference_that_raises_leaves_the_native_verdict_open(manager, tmp_path):
    (tmp_path / "problems").mkdir()
    (tmp_path / "solutions" / "broken").mkdir(parents=True)
    example = EXAMPLE.parent / "minibench"
    problem = (example / "problems" / "relu.py").read_text()
    (tmp_path / "problems" / "broken.py").write_text(
        problem.replace("return torch.relu(x)", "raise ValueError('no reference here')"))
    (tmp_path / "solutions" / "broken" / "clamp.py").write_text(
        (example / "solutions" / "relu" / "clamp.py").read_text())
    config = RunConfig(bench="minibench", root=tmp_path, gates=["EXC-01"])
    verdict = judge_case(cases(manager, config)["broken/clamp"], config, manager)
    assert verdict.native.accept is None and "no reference here" in verdict.native.reason


def test_a_root_without_problems_is_a_discovery_error(manager, tmp_path):
    with pytest.raises(hookspecs.DiscoveryError, match="no problems"):
        manager.hook.kdiff_discover(bench="minibench",
                                    config=RunConfig(bench="minibench", root=tmp_path))
