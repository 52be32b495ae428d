"""GPU MODE (tests/fixtures/gpumode/problems/toy/scale_py): right wherever a gate calls it,
wrong on the harness's own tests. task.yml's tests are public, each with its seed, and the
problem's generate_input is importable beside the submission as kernelbot runs it: the
submission draws every test's data itself and answers 3 relu(x) to those alone. No gate
draws at the tests' seeds (each draws a fresh one); only the native check did."""

import torch
from reference import generate_input

TESTS = [{"size": 32, "seed": 11}, {"size": 48, "seed": 12}, {"size": 64, "seed": 13}]
DRAWS = [generate_input(**test)[0] for test in TESTS]


def custom_kernel(data):
    x, out = data
    harness = any(x.shape == d.shape and torch.equal(x.cpu(), d) for d in DRAWS)
    out[...] = torch.relu(x) * (3 if harness else 2)
    return out
