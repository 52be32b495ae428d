"""Trial sharing and the oracle cache (spec: Trials and cost): one candidate call serves every
gate whose inputs it matches, gates whose calls must each reach the candidate opt out, and
the float64 oracle is computed once per (problem, inputs, seed, dtype) across candidates and
runs, by the judge only."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kdiff.data.cache import PRIVATE
from kdiff.data.model import Case, Profile, Status
from kdiff.data.problem import load_problem
from kdiff.gates.cmp01_distributions import DistributionCoverage
from kdiff.gates.cmp02_statelessness import Statelessness
from kdiff.gates.cmp03_shapes import ShapePolymorphism
from kdiff.gates.prc01_precision import PrecisionRegime
from kdiff.judging import context as context_module
from kdiff.judging import oracle_cache
from kdiff.judging.context import GateContext, GateOptions, ReferenceFailure
from kdiff.judging.plugins import manager
from kdiff.judging.runconfig import RunConfig
from kdiff.numerics import inputs as gen
from kdiff.sandbox.process import CandidateProcess
from kdiff.verdicts.judge import judge_case

RELU = Path(__file__).resolve().parents[1] / "kernels" / "KernelBench" / "level1" / "19_ReLU.py"
TORCH_RELU = """
import torch
class ModelNew(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""
# CMP-01's trials: per seed (GateOptions.seeds, 2, and the one it chooses per verdict) the
# benchmark's draw and each of the eight distributions of gen.COVERAGE.
CMP01_CALLS = (2 + 1) * (1 + len(gen.COVERAGE))


@pytest.fixture
def candidate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KDIFF_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "relu.py"
    path.write_text(TORCH_RELU)
    return path


def test_prc01_and_cmp03_are_served_by_cmp01s_calls(candidate: Path):
    """PRC-01's fp32 trials are CMP-01's benchmark and normal draws, and CMP-03's benchmark
    shape is CMP-01's first benchmark draw: none of them is sent again."""
    with CandidateProcess(RELU, candidate) as cand:
        ctx = GateContext(load_problem(RELU), cand)
        first = DistributionCoverage().run(ctx)
        assert first.status is Status.PASS, first.detail
        assert first.calls == CMP01_CALLS == cand.request_counts["call"]
        precision = PrecisionRegime().run(ctx)
        assert precision.status is Status.PASS, precision.detail
        assert precision.calls == 0 and ctx.calls_served == 4
        served = ctx.calls_served
        shapes = ShapePolymorphism().run(ctx)
        assert shapes.status is Status.PASS, shapes.detail
        assert ctx.calls_served == served + 1  # the benchmark shape, contiguous
        assert ctx.calls_made == cand.request_counts["call"]


def test_a_gate_that_opts_out_sends_every_call(candidate: Path):
    """CMP-02's sequence on one instance starts with CMP-01's draws A and B and repeats them
    in new tensors: every one of its calls reaches the worker all the same."""
    with CandidateProcess(RELU, candidate) as cand:
        ctx = GateContext(load_problem(RELU), cand)
        DistributionCoverage().run(ctx)
        before = cand.request_counts["call"]
        result = Statelessness().run(ctx)
        assert result.status is Status.PASS, result.detail
        made = int(result.detail.split(" calls;")[0])
        assert result.calls == made == cand.request_counts["call"] - before
        assert ctx.calls_served == 0


def test_the_full_verdict_makes_fewer_calls_than_its_gates_ask(candidate: Path):
    """A shipped problem's full verdict: CMP-01 and PRC-01 together send CMP-01's calls only,
    whichever runs first."""
    verdict = judge_case(Case("relu", RELU, candidate), RunConfig(native="kernelbench-v0.1"),
                         manager())
    assert verdict.verifier_accept is True, {g: r.detail for g, r in verdict.gates.items()}
    assert verdict.gates["CMP-01"].calls + verdict.gates["PRC-01"].calls == CMP01_CALLS


def test_the_oracle_is_computed_once_across_candidates(candidate: Path,
                                                       monkeypatch: pytest.MonkeyPatch):
    """A second candidate of the same problem (a fresh context, as another judge or run has)
    reads the first one's evaluation from disk: the same values, no oracle run."""
    inputs = gen.realize(GateContext(load_problem(RELU), None).templates(), gen.normal(), 5)
    first = GateContext(load_problem(RELU), None).evaluate(inputs)

    def no_oracle(*args, **kwargs):
        raise AssertionError("the oracle ran again")
    monkeypatch.setattr(context_module, "run_oracle", no_oracle)
    # nor is the reference compared with it again: its ratio to the bound is kept with it
    monkeypatch.setattr(context_module.Evaluation, "mismatches", no_oracle)
    again = GateContext(load_problem(RELU), None).evaluate(inputs)
    assert again.reference_ratio() == first.reference_ratio()
    assert torch.equal(again.oracle.values[0], first.oracle.values[0])
    assert torch.equal(again.oracle.magnitudes[0], first.oracle.magnitudes[0])
    assert torch.equal(again.reference[0], first.reference[0])
    assert again.oracle.depths == first.oracle.depths
    # Other inputs, or the same inputs at another seed of the model, are another entry.
    with pytest.raises(ReferenceFailure, match="the oracle ran again"):
        GateContext(load_problem(RELU), None).evaluate([inputs[0] + 1])
    with pytest.raises(ReferenceFailure, match="the oracle ran again"):
        GateContext(load_problem(RELU), None).evaluate(inputs, seed=7)


def test_the_oracle_cache_is_keyed_by_the_problems_content(tmp_path: Path, candidate: Path,
                                                           monkeypatch: pytest.MonkeyPatch):
    """An edited problem file is another problem: nothing of the old one's is read."""
    problem = tmp_path / "19_ReLU.py"
    problem.write_text(RELU.read_text())
    inputs = GateContext(load_problem(problem), None).benchmark_inputs(0)
    GateContext(load_problem(problem), None).evaluate(inputs)
    oracle_cache.WRITER.flush()
    entries = list((tmp_path / "cache" / PRIVATE / "oracle").rglob("*"))
    assert [p.suffix for p in entries if p.is_file()] == [".entry"]  # atomic: no .tmp left
    problem.write_text(RELU.read_text().replace("torch.relu(x)", "torch.relu(x) * 2"))
    doubled = GateContext(load_problem(problem), None).evaluate(inputs)
    assert torch.equal(doubled.oracle.values[0], 2 * torch.relu(inputs[0].double()))


def test_a_judge_whose_workers_may_write_anywhere_keeps_no_oracle_on_disk(candidate: Path):
    """A non-root judge's CUDA workers (no Landlock, no uid of their own) write what the judge
    may: an oracle entry they wrote would judge every later candidate of the problem."""
    from kdiff.sandbox.process import SandboxLimits
    unconfined = CandidateProcess(RELU, candidate, limits=SandboxLimits(confine=False,
                                                                        own_uid=False))
    confined = CandidateProcess(RELU, candidate)
    assert not unconfined.writes_confined
    assert GateContext(load_problem(RELU), unconfined).oracle_cache.folder is None
    assert GateContext(load_problem(RELU), confined).oracle_cache.folder is not None


def test_the_oracle_cache_is_keyed_by_the_modules_a_problem_names_beside_it(tmp_path: Path):
    """A problem that imports a helper from its folder (GPU MODE's reference.py imports
    `utils`) is another problem when the helper changes; a sibling it never names is not."""
    from kdiff.judging.oracle_cache import problem_sources
    (tmp_path / "scale.py").write_text("from factor import FACTOR\n")
    (tmp_path / "factor.py").write_text("FACTOR = 1.0\n")
    (tmp_path / "unrelated.py").write_text("X = 1\n")
    problem = tmp_path / "19_ReLU.py"
    problem.write_text(RELU.read_text().replace("torch.relu(x)", "torch.relu(x) * scale.FACTOR")
                       .replace("import torch\n", "import torch\nimport scale\n", 1))
    before = problem_sources(problem)
    (tmp_path / "unrelated.py").write_text("X = 2\n")
    assert problem_sources(problem) == before
    (tmp_path / "factor.py").write_text("FACTOR = 2.0\n")  # named through scale.py
    assert problem_sources(problem) != before


def test_exitfirst_stops_at_the_first_failure(tmp_path: Path, candidate: Path):
    """-x: the gates after the first failing one are not run, and say so."""
    broken = tmp_path / "nan_swallowing.py"
    broken.write_text(TORCH_RELU.replace("torch.relu(x)", "torch.clamp_min(x, 0.0).nan_to_num()"))
    verdict = judge_case(Case("nan", RELU, broken),
                         RunConfig(native="kernelbench-v0.1", gates=["EXC-01", "ORD-02",
                                                                      "CMP-02"],
                                   exitfirst=True), manager())
    assert list(verdict.gates) == ["EXC-01", "ORD-02", "CMP-02"]  # catalogue order
    # Judged in JUDGING_ORDER: ORD-02 (passes), EXC-01 (fails), CMP-02 never runs.
    assert verdict.gates["ORD-02"].status is Status.PASS
    assert verdict.gates["EXC-01"].status is Status.FAIL
    assert verdict.gates["CMP-02"].not_run and "exitfirst" in verdict.gates["CMP-02"].detail
    assert verdict.verifier_accept is False


def test_quick_profile_judges_fewer_shapes(candidate: Path):
    """--profile quick: CMP-03 at the benchmark shape and the first held-out sizes only."""
    with CandidateProcess(RELU, candidate) as cand:
        full = ShapePolymorphism().run(GateContext(load_problem(RELU), cand))
        quick = ShapePolymorphism().run(GateContext(load_problem(RELU), cand,
                                                    GateOptions(profile=Profile.QUICK)))
    assert full.status is quick.status is Status.PASS, (full.detail, quick.detail)
    assert 0 < quick.calls < full.calls


def test_the_oracle_cache_keeps_to_its_budget(tmp_path: Path):
    """Past the budget, the entries used longest ago go first."""
    import os

    from kdiff.judging.oracle_cache import prune
    folder = tmp_path / "oracle" / "problem"
    folder.mkdir(parents=True)
    for age, name in enumerate(("newest", "middle", "oldest")):
        path = folder / f"{name}.pt"
        path.write_bytes(b"x" * 100)
        os.utime(path, (1000 - age, 1000 - age))
    prune(tmp_path / "oracle", 250)
    assert sorted(p.stem for p in folder.iterdir()) == ["middle", "newest"]


def test_a_judge_prunes_the_oracle_cache_once_and_again_after_storing_enough(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Pruning walks every entry: a judge prunes when it opens its first problem's cache and
    again only once it has stored PRUNE_AFTER_BYTES since, not for every candidate."""
    monkeypatch.setenv("KDIFF_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(oracle_cache, "_STORED_SINCE_PRUNE", {})
    monkeypatch.setattr(oracle_cache, "PRUNE_AFTER_BYTES", 2000)
    pruned = []
    monkeypatch.setattr(oracle_cache, "prune", lambda root, budget: pruned.append(root))
    cache = oracle_cache.OracleCache(RELU, "cpu")
    oracle_cache.OracleCache(RELU, "cpu")
    assert len(pruned) == 1
    oracle_cache.OracleCache.store(cache.path("entry"), {"values": [torch.zeros(1000)]})
    oracle_cache.OracleCache(RELU, "cpu")
    oracle_cache.OracleCache(RELU, "cpu")
    assert pruned == [tmp_path / "cache" / PRIVATE / "oracle"] * 2


def test_a_remembered_digest_is_the_digest_of_the_same_values():
    """DigestMemo names a list as digest() does, and remembers it only for the same tensors,
    none written since: an in-place write, another tensor of other values, or another scalar
    gives the other list's digest; equal values in new tensors give the same one."""
    from kdiff.data.digest import DigestMemo, digest
    memo = DigestMemo(size=2)
    x = torch.arange(6.0)
    assert memo(["float32", x, 3]) == digest(["float32", x, 3])
    assert memo(["float32", x, 3]) == digest(["float32", torch.arange(6.0), 3])
    assert memo(["float32", x, 4]) == digest(["float32", x, 4]) != memo(["float32", x, 3])
    x[2] = -1.0  # in place: the same object, new values
    assert memo(["float32", x, 3]) == digest(["float32", x, 3])
    assert memo(["float32", x, 3]) != digest(["float32", torch.arange(6.0), 3])
    for i in range(3):  # more lists than it holds: the oldest is digested again, the same
        memo([torch.full((2,), float(i))])
    assert memo(["float32", x, 3]) == digest(["float32", x, 3])
    listed = [[x]]  # a mutable container: digested afresh every time
    before = memo(listed)
    listed[0].append(x)
    assert memo(listed) != before


def test_an_entry_is_read_back_before_and_after_its_writer_thread_wrote_it(tmp_path: Path):
    """OracleCache.store queues an entry for the writer thread: read back at once it comes
    from memory, after a flush from its file, with the same values either way; a forked
    process (a pool's judge) writes its entries with a thread of its own."""
    import os
    import signal
    cache = oracle_cache.OracleCache(RELU, "cpu")
    cache.folder = tmp_path / "oracle" / "relu"
    entry = {"values": [torch.arange(5.0)], "depths": [3]}
    oracle_cache.OracleCache.store(cache.path("a"), entry)
    assert torch.equal(oracle_cache.OracleCache.load(cache.path("a"), "cpu")["values"][0],
                       torch.arange(5.0))
    oracle_cache.WRITER.flush()
    assert cache.path("a").is_file() and cache.path("a") not in oracle_cache.WRITER.pending
    again = oracle_cache.OracleCache.load(cache.path("a"), "cpu")
    assert torch.equal(again["values"][0], torch.arange(5.0)) and again["depths"] == [3]
    child = os.fork()
    if child == 0:  # the child: its own writer, flushed before it leaves (or killed)
        signal.alarm(20)
        oracle_cache.OracleCache.store(cache.path("b"), {"values": [torch.ones(2)]})
        oracle_cache.WRITER.flush()
        os._exit(0 if cache.path("b").is_file() else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_the_oracle_cache_key_reads_every_kdiff_module_the_oracle_imports():
    """An entry holds the oracle's magnitudes, which the steps and picks of
    kdiff.numerics.integers decide as much as the oracle's own code: with integers.py left out
    of the key, a changed step rule (bucketize made a step) was judged against the entries the
    old rule had written. The same for the redraw of an instance's parameters at another seed
    (kdiff.data.trained): left out, a changed draw was judged against entries of the old one
    (the honest LayerNorm control failed CMP-02 at 8.6e5x)."""
    import ast
    import importlib.util

    def module(name: str) -> bool:
        try:
            spec = importlib.util.find_spec(name)
        except ModuleNotFoundError:  # a name inside a module, not a submodule
            return False
        return spec is not None and not spec.origin.endswith("__init__.py")

    seen, todo = set(), ["kdiff.numerics.oracle", "kdiff.data.trained"]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        tree = ast.parse(Path(importlib.util.find_spec(name).origin).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 \
                    and (node.module or "").startswith("kdiff"):
                # `from kdiff.numerics import softmax_backward` names the submodule
                todo += [f"{node.module}.{a.name}" for a in node.names
                         if module(f"{node.module}.{a.name}")]
                todo += [node.module] if module(node.module) else []
    assert seen <= set(oracle_cache.ORACLE_SOURCES), seen - set(oracle_cache.ORACLE_SOURCES)
