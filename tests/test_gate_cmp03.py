"""CMP-03 shape polymorphism, three states per defect: the honest kernel of the problem passes
at every held-out size and layout, the defective one fails with the expected signature, and
KernelBench v0.1's native check accepts both."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kdiff.data.model import Case, Profile, Status, Verdict
from kdiff.gates.cmp03_shapes import OFF_BLOCK_SIZES, fresh_size, held_out_sizes, next_prime
from kdiff.judging.plugins import manager
from kdiff.judging.runconfig import RunConfig
from kdiff.verdicts.judge import judge_case

KERNELS = Path(__file__).resolve().parents[1] / "kernels"
PROBLEMS = KERNELS / "KernelBench" / "level1"

# problem file, the signature its red-team kernel (sample 0) must fail with
PAIRS = [
    ("30_Softsign.py", "shape_specialised"),  # grid n // 1024, no mask
    ("39_L2Norm_.py", "shape_specialised"),  # BLOCK = 1024 = the benchmark's dim
    ("38_L1Norm_.py", "noncontiguous_unsupported"),  # row-major addressing, no .contiguous()
]


def judge(problem: Path, candidate: Path, profile: Profile = Profile.FULL) -> Verdict:
    case = Case(candidate.stem, problem, candidate)
    config = RunConfig(native="kernelbench-v0.1", gates=["CMP-03"])
    config.gate_options.profile = profile
    return judge_case(case, config, manager())


def corpus_kernel(problem: str, run: str) -> Path:
    pid = problem.split("_")[0]
    return KERNELS / "runs" / run / f"level_1_problem_{pid}_sample_0_kernel.py"


def test_held_out_sizes_cover_one_odd_prime_scaled_and_off_block():
    sizes = held_out_sizes(1024)
    assert sizes[:4] == [1, 513, 1031, 2049]  # 1, scaled down (odd), next prime, scaled up
    assert set(OFF_BLOCK_SIZES) <= set(sizes)
    assert 1024 not in sizes
    assert next_prime(16) == 17 and next_prime(1) == 2


def test_the_size_chosen_per_verdict_is_smaller_and_no_held_out_one():
    chosen = {fresh_size(16, seed) for seed in range(200)}
    assert chosen <= set(range(2, 16)) - set(held_out_sizes(16)) and len(chosen) > 1
    assert fresh_size(16, 7) == fresh_size(16, 7)  # one verdict's seed, one size
    assert fresh_size(4, 7) == 2  # 3 is held out (4 // 2 | 1)
    assert fresh_size(2, 7) is None  # no size between 1 and the benchmark's


def test_the_larger_size_chosen_per_verdict_is_at_most_twice_and_no_held_out_one():
    chosen = {fresh_size(16, seed, above=True) for seed in range(200)}
    assert chosen <= set(range(17, 33)) - set(held_out_sizes(16)) and len(chosen) > 1
    assert fresh_size(2, 7, above=True) == 4  # 3 is held out (the next prime)
    assert fresh_size(1, 7, above=True) is None  # 2 is the next prime
    assert fresh_size(16, 7, above=True) == fresh_size(16, 7, above=True)


@pytest.mark.parametrize("problem,signature", PAIRS, ids=[p for p, _ in PAIRS])
def test_honest_passes_and_defective_fails(problem: str, signature: str):
    honest = judge(PROBLEMS / problem, corpus_kernel(problem, "controls"))
    defective = judge(PROBLEMS / problem, corpus_kernel(problem, "redteam"))
    assert honest.native.accept is True, honest.native.reason
    assert defective.native.accept is True, defective.native.reason
    good, bad = honest.gates["CMP-03"], defective.gates["CMP-03"]
    assert good.status is Status.PASS, good.detail
    assert "non-contiguous" not in good.detail  # no layout was skipped
    assert bad.status is Status.FAIL, bad.detail
    assert bad.signature == signature, bad.detail


ODD_REFUSING_PROBLEM = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """Pairs adjacent features: only even feature counts are in the shape class."""

    def forward(self, x):
        return x.reshape(x.shape[0], -1, 2).sum(-1)


batch_size = 4
dim = 64


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''

PAIR_SUM_CANDIDATE = '''
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        return x[:, 0::2] + x[:, 1::2]
'''


def test_sizes_the_reference_refuses_are_skipped_not_failed(tmp_path: Path):
    problem = tmp_path / "90_PairSum.py"
    problem.write_text(ODD_REFUSING_PROBLEM)
    candidate = tmp_path / "pair_sum.py"
    candidate.write_text(PAIR_SUM_CANDIDATE)
    result = judge(problem, candidate).gates["CMP-03"]
    assert result.status is Status.PASS, result.detail
    assert "not judged (dim=" in result.detail  # dim=1, 17, 127, ...: get_inputs() raised


PAIR_ROTATION_PROBLEM = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """Rotates adjacent feature pairs, as interleaved RoPE does: at dim 1 no pair is whole and
    the output is empty; odd dims above 1 raise."""

    def forward(self, x):
        x1, x2 = x[:, 0::2], x[:, 1::2]
        return torch.stack([x1 - x2, x1 + x2], dim=-1).flatten(-2)


batch_size = 8
dim = 16


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''

# Returns the input's shape, as a masked kernel writing into empty_like(x) does: at dim 1 the
# lone feature passes through.
PAIR_ROTATION_CANDIDATE = '''
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        n = x.shape[1] // 2
        a, b = x[:, 0:2 * n:2], x[:, 1:2 * n:2]
        out = x.clone()
        out[:, 0:2 * n:2], out[:, 1:2 * n:2] = a - b, a + b
        return out
'''


def test_a_size_where_the_reference_s_output_is_empty_is_skipped_not_failed(tmp_path: Path):
    """Interleaved RoPE at head_dim 1 failed `shape_specialised` (the candidate's (8, 1)
    against the reference's (8, 0)); a wrong shape where the reference's output has elements
    still fails."""
    problem = tmp_path / "93_PairRotation.py"
    problem.write_text(PAIR_ROTATION_PROBLEM)
    candidate = tmp_path / "pair_rotation.py"
    candidate.write_text(PAIR_ROTATION_CANDIDATE)
    result = judge(problem, candidate).gates["CMP-03"]
    assert result.status is Status.PASS, result.detail
    assert "not judged (dim=1 (benchmark 16): inputs (8, 1): the reference's output 0 has no " \
        "elements here (shape (8, 0))" in result.detail, result.detail
    padded = tmp_path / "padded_to_the_benchmark_batch.py"
    padded.write_text(PAIR_ROTATION_CANDIDATE.replace(
        "        return out", "        return torch.cat([out, out.new_zeros(max(0, 8 - len(out)), "
        "out.shape[1])])").replace("import torch.nn", "import torch\nimport torch.nn"))
    result = judge(problem, padded).gates["CMP-03"]
    assert result.status is Status.FAIL and result.signature == "shape_specialised", result.detail
    assert result.detail.startswith("batch_size=1 (benchmark 8)"), result.detail


WIDE_DOUBLING_PROBLEM = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2.0


batch_size = 16
dim = 16384  # 2^18 elements: over the CPU's held-out cap, well under a GPU's


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''


def test_the_held_out_cap_admits_the_judged_sizes_scaled_up_on_a_gpu():
    from kdiff.gates.cmp03_shapes import CPU_MAX_ELEMENTS, max_trial_elements
    from kdiff.judging.context import GateOptions
    assert max_trial_elements(GateOptions(device="cpu", max_elements=1 << 20)) == CPU_MAX_ELEMENTS
    for judged in (1 << 16, 1 << 20, None):
        cap = max_trial_elements(GateOptions(device="cuda", max_elements=judged))
        assert cap >= 2 * (judged or 1 << 22) + 1  # one dimension of the largest input, 2v+1


@pytest.mark.gpu
def test_on_a_gpu_a_large_input_is_judged_at_its_benchmark_shape(tmp_path):
    import torch
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    from kdiff.judging.context import GateOptions
    problem = tmp_path / "1_WideDoubling.py"
    problem.write_text(WIDE_DOUBLING_PROBLEM)
    candidate = tmp_path / "doubling.py"
    candidate.write_text(WIDE_DOUBLING_PROBLEM.replace("class Model(", "class ModelNew("))
    config = RunConfig(native="kernelbench-v0.1", gates=["CMP-03"],
                       gate_options=GateOptions(device="cuda"))
    gate = judge_case(Case("wide", problem, candidate), config, manager()).gates["CMP-03"]
    assert gate.status is Status.PASS, gate.detail
    not_run = gate.detail.split("not run (", 1)[1] if "not run (" in gate.detail else ""
    assert "benchmark shape" not in not_run, gate.detail


def test_sizes_over_the_cap_are_found_without_drawing_the_inputs():
    """One constant sizing three dimensions of one input (a [2, D, D, D] weight, as
    TritonBench's DIM_<size> naming gives) grows it cubically: at D = 1000 the draw is 2e9
    elements. The cap is checked on a meta-device draw first, and nothing is allocated."""
    from types import SimpleNamespace

    from kdiff.gates.cmp03_shapes import inputs_over

    devices = []

    def draw(dim):
        def benchmark_inputs(seed):
            weight = torch.randn(2, dim, dim, dim)
            devices.append(weight.device.type)
            return [torch.randn(1, dim, 5, 5), weight]
        return SimpleNamespace(benchmark_inputs=benchmark_inputs)

    assert inputs_over(draw(1000), 1 << 16) is True
    assert inputs_over(draw(3), 1 << 16) is False
    assert devices == ["meta", "meta"]

    def reads_values(seed):  # a get_inputs() the meta device cannot run: the draw decides
        return [torch.randperm(5).tolist()]
    assert inputs_over(SimpleNamespace(benchmark_inputs=reads_values), 1 << 16) is False


MODE_PROBLEM = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    """A clamp whose bounds the benchmark picks: its test judges both configurations."""

    def __init__(self, symmetric):
        super().__init__()
        self.low = -1.0 if symmetric else 0.0

    def forward(self, x):
        return x.clamp(self.low, 1.0)


batch_size = 8
dim = 32
SYMMETRIC = 1
KDIFF_VARIANTS = {"the one-sided clamp": {"SYMMETRIC": 0}}


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [SYMMETRIC]
'''

SYMMETRIC_ONLY_CANDIDATE = '''
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, symmetric):
        super().__init__()

    def forward(self, x):
        return x.clamp(-1.0, 1.0)
'''


@pytest.mark.parametrize("profile", [Profile.FULL, Profile.QUICK])
def test_a_problem_s_variants_are_judged_and_their_selectors_are_no_sizes(tmp_path: Path,
                                                                          profile: Profile):
    """In both profiles: the benchmark's own other configurations are a few calls at its
    sizes (on TritonBench-T GPT-4o's RAG answers quick missed 5 of its 9 misses there)."""
    from kdiff.data.problem import load_problem
    problem = tmp_path / "91_Clamp.py"
    problem.write_text(MODE_PROBLEM)
    assert load_problem(problem).size_constants() == {"batch_size": 8, "dim": 32}
    candidate = tmp_path / "symmetric_only.py"
    candidate.write_text(SYMMETRIC_ONLY_CANDIDATE)
    verdict = judge(problem, candidate, profile)
    assert verdict.native.accept is True, verdict.native.reason  # the benchmark's config
    result = verdict.gates["CMP-03"]
    assert result.status is Status.FAIL, result.detail
    assert result.signature == "variant_specialised"
    assert result.detail.startswith("the one-sided clamp")


# Two random references: dropout, whose fp32 and float64 runs draw the same mask from one seed
# on the CPU (values judged, and failing, against a reference found random); and a mask drawn
# in the working dtype, which the float64 oracle draws differently (no values can be judged:
# every trial under-specified, as for dropout on a GPU).
RANDOM_REFERENCES = {
    "dropout": "torch.nn.functional.dropout(x.clamp(self.low, 1.0), 0.5, training=True)",
    "mask in the working dtype": "x.clamp(self.low, 1.0) * (torch.rand_like(x) < 0.5)",
}

RAISES_ON_THE_VARIANT_CANDIDATE = '''
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, symmetric):
        super().__init__()
        if not symmetric:
            raise NotImplementedError("only the symmetric clamp")

    def forward(self, x):
        return x.clamp(-1.0, 1.0) * 2.0
'''


@pytest.mark.parametrize("forward", RANDOM_REFERENCES.values(), ids=RANDOM_REFERENCES.keys())
def test_a_random_reference_excuses_values_not_a_raise(tmp_path: Path, forward: str):
    """Against a random reference values say nothing: CMP-03 goes on past value failures, and
    where the reference is too far from the oracle to judge values at all it still calls the
    candidate; one that cannot run a configuration of the benchmark fails."""
    problem = tmp_path / "92_ClampRandom.py"
    problem.write_text(MODE_PROBLEM.replace("return x.clamp(self.low, 1.0)", f"return {forward}"))
    candidate = tmp_path / "raises_on_the_variant.py"
    candidate.write_text(RAISES_ON_THE_VARIANT_CANDIDATE)
    result = judge(problem, candidate).gates["CMP-03"]
    assert result.status is Status.FAIL, result.detail
    assert result.signature == "raised"
    assert result.detail.startswith("the one-sided clamp: inputs (8, 32): raised: NotImplementedError")
