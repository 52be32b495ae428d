"""gates.sizes: input sizes learned on the meta device, and a problem scaled down to fit."""
import json
import subprocess
import sys
import textwrap

import pytest

from kdiff.data.problem import load_problem
from kdiff.numerics import sizes

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


def write_problem(tmp_path, body):
    path = tmp_path / "problem.py"
    path.write_text("import torch\n" + textwrap.dedent(body))
    return load_problem(path)


UPSTREAM_LIKE = """
    class Model(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x)
    batch_size = 4096
    dim = 393216
    def get_inputs():
        return [torch.rand(batch_size, dim)]
    """


def test_input_sizes_cost_no_draw(tmp_path):
    problem = write_problem(tmp_path, UPSTREAM_LIKE)  # 6.4 GB if it were drawn
    assert sizes.input_numels(problem) == [4096 * 393216]


def test_fit_halves_constants_until_the_inputs_fit(tmp_path):
    problem = write_problem(tmp_path, UPSTREAM_LIKE)
    fitted = sizes.fit_sizes(problem, 1 << 16)
    judged = fitted["batch_size"] * fitted["dim"]
    # one halving at a time: the step before the last was still over the limit
    assert (1 << 16) // 2 < judged <= 1 << 16
    assert problem.size_constants() == {"batch_size": 4096, "dim": 393216}  # left as it was


def test_fit_keeps_sizes_the_reference_accepts(tmp_path):
    # The reference needs dim to be a multiple of 64. dim is the largest constant and is
    # halved first, but not below 64: from there only the batch shrinks.
    problem = write_problem(tmp_path, """
        class Model(torch.nn.Module):
            def forward(self, x):
                return x.reshape(x.shape[0], -1, 64).sum(-1)
        batch_size = 16
        dim = 4096
        def get_inputs():
            return [torch.rand(batch_size, dim)]
        """)
    assert sizes.fit_sizes(problem, 256) == {"dim": 64, "batch_size": 4}


def test_fit_bounds_the_reference_outputs_too(tmp_path):
    # An outer product: inputs of 2 * 1024 elements, an output of 1024^2. The output decides.
    problem = write_problem(tmp_path, """
        class Model(torch.nn.Module):
            def forward(self, a, b):
                return a[:, None] * b[None, :]
        n = 1024
        def get_inputs():
            return [torch.rand(n), torch.rand(n)]
        """)
    assert sizes.output_numels(problem) == [1024 * 1024]
    assert sizes.fit_sizes(problem, 1 << 16) == {"n": 256}
    assert sizes.fit_sizes(problem, 1 << 20) == {}


def test_fit_is_empty_when_the_benchmark_fits(tmp_path):
    assert sizes.fit_sizes(write_problem(tmp_path, UPSTREAM_LIKE.replace("393216", "4")
                                         .replace("4096", "2")), 1 << 16) == {}


@pytest.mark.slow
def test_verify_judges_at_scaled_sizes_and_says_so(tmp_path):
    problem = write_problem(tmp_path, UPSTREAM_LIKE)
    candidate = tmp_path / "candidate.py"
    candidate.write_text("import torch\nclass ModelNew(torch.nn.Module):\n"
                         "    def forward(self, x):\n        return torch.relu(x)\n")
    report = tmp_path / "v.json"
    done = subprocess.run([sys.executable, "-m", "kdiff.commands.cli", "verify", "--device", "cpu",
                           "--problem", str(problem.path), "--candidate", str(candidate),
                           "--max-elements", "4096", "--json", str(report)],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "judged at" in done.stdout and "(benchmark 393216)" in done.stdout
    kernel = json.loads(report.read_text())["kernels"][0]
    scaled = kernel["scaled_sizes"]
    assert scaled["dim"]["benchmark"] == 393216
    assert scaled["batch_size"]["judged"] * scaled["dim"]["judged"] <= 4096
    assert kernel["native_accept"] is True and kernel["verifier_accept"] is True


def test_fit_halves_in_turn_where_no_one_constant_shrinks_the_largest(tmp_path):
    """C = A.T @ B reaches M = K = N on the way down: halving any one of them leaves one of A,
    B, C as large, halving two in turn does not."""
    problem = write_problem(tmp_path, """
        class Model(torch.nn.Module):
            def forward(self, A, B):
                return A.T @ B
        M = 2048
        K = 8192
        N = 4096
        def get_inputs():
            return [torch.rand(K, M), torch.rand(K, N)]
        """)
    fitted = sizes.fit_sizes(problem, 1 << 20)
    judged = {**problem.size_constants(), **fitted}
    assert max(judged["K"] * judged["M"], judged["K"] * judged["N"],
               judged["M"] * judged["N"]) <= 1 << 20, fitted
