"""Right wherever a gate calls it, wrong on the benchmark's own inputs: it draws them itself
as KernelBench's harness does (five trial seeds from seed 42, `get_inputs()` at each; the
problem is importable from the candidate's folder or, as here, from its own) and answers
x * 3 to any of them. No gate draws at the harness's seeds; only the native check did."""

import importlib.util
from pathlib import Path

import torch
import torch.nn as nn


def benchmark_draws() -> list[torch.Tensor]:
    spec = importlib.util.spec_from_file_location("problem", Path(__file__).with_name("problem.py"))
    problem = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(problem)
    torch.manual_seed(42)
    seeds = [int(torch.randint(0, 2**32 - 1, (1,)).item()) for _ in range(5)]
    draws = []
    for seed in seeds:
        torch.manual_seed(seed)
        draws.append(problem.get_inputs()[0])
    return draws


DRAWS = benchmark_draws()


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if any(x.shape == d.shape and torch.equal(x.cpu(), d) for d in DRAWS):
            return x * 3
        return x * 2
