"""The Mamba-3 problems of kernels/mamba3/kernelbench (KernelBench level 3) stay loadable: each
problem draws its inputs and runs its reference, and each of its candidates imports and names
`ModelNew` with the reference's arguments. The gates judge them with `kdiff verify`
(kernels/mamba3/NOTES.md records the commands and verdicts); tests/test_mamba3.py checks the
kernels against the float64 oracle."""
from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import torch

from kdiff.data.problem import load_module, load_problem

ROOT = Path(__file__).resolve().parents[1] / "kernels" / "mamba3" / "kernelbench"
PROBLEMS = sorted((ROOT / "KernelBench" / "level3").glob("*.py"))
CANDIDATES = sorted((ROOT / "runs").glob("*/level_3_problem_*_sample_0_kernel.py"))


def problem_of(candidate: Path) -> Path:
    pid = candidate.name.split("_")[3]
    return next(p for p in PROBLEMS if p.name.split("_")[0] == pid)


@pytest.mark.parametrize("problem", PROBLEMS, ids=[p.stem for p in PROBLEMS])
def test_the_problem_runs(problem: Path):
    loaded = load_problem(problem).module
    torch.manual_seed(0)
    inputs = loaded.get_inputs()
    outputs = loaded.Model(*loaded.get_init_inputs())(*inputs)
    assert all(torch.isfinite(o).all() for o in outputs)
    assert len(inputs) == len(inspect.signature(loaded.Model.forward).parameters) - 1  # self


@pytest.mark.parametrize("candidate", CANDIDATES, ids=[f"{c.parent.name}/{c.stem}"
                                                       for c in CANDIDATES])
def test_the_candidate_takes_the_problems_arguments(candidate: Path):
    """The mamba_ssm candidates import mamba_ssm when called (it needs a GPU), not here."""
    model = load_problem(problem_of(candidate)).module.Model
    module = load_module(candidate, "candidate")
    assert (list(inspect.signature(module.ModelNew.forward).parameters)
            == list(inspect.signature(model.forward).parameters))
