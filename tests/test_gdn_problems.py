"""The recurrence problems of kernels/gdn/kernelbench (KernelBench level 3) stay loadable: each
problem draws its inputs and runs its reference, and its chunked candidate imports and names
`ModelNew` with the reference's arguments. The gates judge them with `kdiff verify` (minutes
each through the interpreter; kernels/gdn/NOTES.md records the commands and verdicts), and
tests/test_gdn.py checks the kernels against the float64 oracle; this only keeps the files
fitting together."""
from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import torch

from kdiff.data.problem import load_module, load_problem

ROOT = Path(__file__).resolve().parents[1] / "kernels" / "gdn" / "kernelbench"
PROBLEMS = sorted((ROOT / "KernelBench" / "level3").glob("*.py"))


@pytest.mark.parametrize("problem", PROBLEMS, ids=[p.stem for p in PROBLEMS])
def test_the_problem_runs_and_its_candidate_takes_the_same_arguments(problem: Path):
    loaded = load_problem(problem).module
    torch.manual_seed(0)
    inputs = loaded.get_inputs()
    outputs = loaded.Model(*loaded.get_init_inputs())(*inputs)
    assert all(torch.isfinite(o).all() for o in outputs)
    pid = problem.name.split("_")[0]
    candidate = load_module(ROOT / "runs" / "chunked" / f"level_3_problem_{pid}_sample_0_kernel.py",
                            "candidate")
    wanted = list(inspect.signature(loaded.Model.forward).parameters)
    assert list(inspect.signature(candidate.ModelNew.forward).parameters) == wanted
    assert len(inputs) == len(wanted) - 1  # self
