"""`kdiff tune` on the chunked Mamba-3 SISO forward (kernels/tune_examples/mamba3_tunable.py)
through the Triton interpreter, at problem 1's own sizes: the search's configurations judged
by the real gates, timed by an injected timer (the interpreter does not time a GPU)."""
import inspect
from pathlib import Path

import pytest
import torch

from kdiff.judging.context import GateOptions
from kdiff.judging.runconfig import RunConfig
from kdiff.tune.judge import ConfigJudge
from kdiff.tune.result import Outcome
from kdiff.tune.search import run
from kdiff.tune.space import read_space
from kdiff.tune.timing import injected

ROOT = Path(__file__).parent.parent
PROBLEM = ROOT / "kernels/mamba3/kernelbench/KernelBench/level3/1_Mamba3SISO.py"
CANDIDATE = ROOT / "kernels/tune_examples/mamba3_tunable.py"


def made_up_time(config) -> float:
    """TF32 halves the time, larger chunks and V-blocks shave some (a GPU's ranking, guessed)."""
    c = dict(config)
    return (1e-3 * {None: 1.1, 64: 1.0, 32: 1.2, 16: 1.5}[c["CHUNK"]] * (64 / c["BV"]) ** 0.1
            * (0.5 if c["DOT"] == "tf32" else 1.0))


def test_the_space_defaults_to_kernels_mamba3s_own():
    from kdiff.kernels.mamba3 import forward
    space = read_space(CANDIDATE)
    default = dict(space.default)
    launch = forward.launch("forward", torch.float32)
    assert (default["num_warps"], default["num_stages"]) == (launch["num_warps"],
                                                             launch["num_stages"])
    parameters = inspect.signature(forward.mamba3_siso_forward).parameters
    # block_v's default is forward_block_v's rule: its widest where the grid fills the GPU
    assert parameters["block_v"].default is None
    assert (default["CHUNK"], default["BV"], default["DOT"]) == (
        parameters["chunk_size"].default, forward.FORWARD_BLOCK_V[0], "ieee")


@pytest.mark.slow  # 45-85 s: four configurations through the interpreter, PRC-01 and RES-01
def test_tuning_mamba3_judges_every_ieee_configuration_correct(tmp_path):
    space = read_space(CANDIDATE)
    config = RunConfig(gates=["PRC-01", "RES-01"], gate_options=GateOptions(device="cpu"))
    judge = ConfigJudge(PROBLEM, CANDIDATE, space, config, tmp_path)
    # seed 2: the default (the forward's own chunks), CHUNK 16 in IEEE at V-blocks 32 and 64,
    # and a TF32 configuration at CHUNK 32
    result = run("random", space, judge, injected(made_up_time), 4, seed=2)
    evaluations = result.evaluations
    assert 1 < len(evaluations) <= 4
    assert evaluations[0].config == space.default and evaluations[0].correct
    assert any(dict(e.config)["CHUNK"] is not None for e in evaluations), "a chunk size set"
    for e in evaluations:
        if dict(e.config)["DOT"] == "ieee":
            assert e.judgement.outcome is Outcome.CORRECT, (e.config, e.judgement.failing)
        # TF32 is not asserted: the interpreter computes TF32 dots in fp32
    assert result.chosen.correct and result.chosen.time <= result.default_time
