"""RES-02's compile results and its cache: nothing a process that ran candidate code computed
is cached for another candidate (kdiff issue 25, class 1)."""
from __future__ import annotations

from pathlib import Path

import pytest

from kdiff.data.model import GateResult, Status
from kdiff.data.problem import load_problem
from kdiff.gates.res02_resources import ResourceBudget
from kdiff.judging.context import GateContext, GateOptions
from kdiff.sandbox.confine import landlock_abi
from kdiff.sandbox.process import CandidateProcess

HERE = Path(__file__).parent
KERNELS = HERE.parent / "kernels"
WIDE_OUTPUT = KERNELS / "KernelBench" / "level1" / "40_Matmul_wide_output.py"
WIDE_TILE = KERNELS / "runs" / "redteam" / "level_1_problem_40_sample_0_kernel.py"
FORGER = HERE / "hostile" / "forges_compile_results.py"


def res02(candidate: Path) -> GateResult:
    # sm_100 alone: the tile's failure (tensor memory) shows there, in 3 s of compiling.
    with CandidateProcess(WIDE_OUTPUT, candidate) as process:
        ctx = GateContext(load_problem(WIDE_OUTPUT), process, GateOptions(targets=("sm_100",)))
        return ResourceBudget().run(ctx)


@pytest.mark.skipif(landlock_abi() == 0, reason="the resource cache is used only where the "
                    "workers' writes are confined (Landlock)")
def test_a_forged_fit_is_not_cached_for_the_kernel_it_names(tmp_path, monkeypatch):
    """The forger runs the shipped over-budget tile inside its own call and, in its compiler
    child, reports that every job fits. It fails for the tile's kernel, and with the cache
    shared the tile judged after it is still rejected."""
    monkeypatch.setenv("KDIFF_CACHE", str(tmp_path))
    # The tile's kernel is compiled by a child of its own, which never imports the forger.
    forger = res02(FORGER)
    assert forger.status is Status.FAIL and forger.signature == "tmem_over_budget", \
        forger.detail
    tile = res02(WIDE_TILE)
    assert tile.status is Status.FAIL and tile.signature == "tmem_over_budget", tile.detail


FITS = {"shared_bytes": 0, "tmem_columns": 0, "num_warps": 4, "registers": 32,
        "spill_store_bytes": 0, "stack_bytes": 0}

# A compiler child that compiles nothing: it notes the files of the jobs it was sent and
# reports that every job fits, twice over, and once for a target nobody asked for.
FORGING_CHILD = """
import json, sys
jobs = json.load(open(sys.argv[1]))
with open(sys.argv[3], "a") as seen:
    seen.write(json.dumps(sorted({job["launch"]["file"] for job in jobs})) + "\\n")
fits = json.loads(sys.argv[4])
with open(sys.argv[2], "a") as out:
    for job in jobs:
        out.write(json.dumps({"resources": {"target": "sm_90", **fits}}) + "\\n")
    for job in jobs * 2:
        out.write(json.dumps({"resources": {"target": job["target"], **fits}}) + "\\n")
"""


def test_each_kernel_file_is_compiled_by_a_child_of_its_own(tmp_path):
    """A child is sent one file's jobs and read for those only; a result not in the form the
    judge asked for (another target) is that job's error, not a fit."""
    import json
    import subprocess
    import sys

    from kdiff.sandbox.launches import Launch, compile_launches
    seen = tmp_path / "seen.jsonl"

    def start(argv, env, log, cwd):
        return subprocess.Popen([sys.executable, "-c", FORGING_CHILD, *argv, str(seen),
                                 json.dumps(FITS)], stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, cwd=str(cwd))

    mine, sibling = (Launch(module=f"kdiff_{n}", file=str(tmp_path / f"{n}.py"),
                            qualname="kernel") for n in ("mine", "sibling"))
    jobs = [(mine, "sm_100"), (sibling, "sm_100"), (mine, "sm_90")]
    outcomes = compile_launches(jobs, timeout=30, start=start, folder=tmp_path)
    assert [json.loads(line) for line in seen.read_text().splitlines()] == [
        [mine.file], [sibling.file]]
    assert outcomes[0]["error"].startswith("the compiler child's result is not understood: "
                                           "resources for 'sm_90', not 'sm_100'")
    assert outcomes[1]["error"] == outcomes[0]["error"]
    assert outcomes[2]["resources"] == {"target": "sm_90", **FITS}  # its own job, its word


def test_an_unchecked_result_is_read_back_for_its_own_candidate_only(tmp_path):
    """What a child reported after importing the kernel's file stays with the candidate
    judged; what the judge computed from its own module of the file is kept for all."""
    from kdiff.sandbox.launches import Launch, ResourceCache
    launch = Launch(module="kdiff_sibling", file=str(WIDE_TILE), qualname="matmul_kernel")
    fits = {"resources": {"target": "sm_100", **FITS}, "cacheable": True, "checked": False}
    forger, tile = ResourceCache("forger", tmp_path), ResourceCache("tile", tmp_path)
    forger.put(launch, "sm_100", fits)
    assert forger.get(launch, "sm_100") == fits
    assert tile.get(launch, "sm_100") is None
    forger.put(launch, "sm_90", {**fits, "resources": {**fits["resources"], "target": "sm_90"},
                                 "checked": True})
    assert tile.get(launch, "sm_90")["checked"] is True


def test_an_entry_is_made_again_once_the_judging_code_changes(tmp_path, monkeypatch):
    """A kernel the extractor could not read is read once the extractor learns to: its old
    "not read" outcome must not come back from the cache."""
    from kdiff.sandbox.launches import Launch, ResourceCache
    launch = Launch(module="kdiff_sibling", file=str(WIDE_TILE), qualname="matmul_kernel")
    cache = ResourceCache("tile", tmp_path)
    cache.put(launch, "sm_90", {"resources": {"target": "sm_90", **FITS}, "cacheable": True,
                                "checked": False})
    assert cache.get(launch, "sm_90") is not None
    monkeypatch.setattr(ResourceCache, "judging_code", staticmethod(lambda: "another"))
    assert cache.get(launch, "sm_90") is None


def test_an_entry_is_made_again_once_a_helper_the_kernel_file_uses_changes(tmp_path):
    """A kernel file that imports a sibling module's jit function (or a kdiff module's)
    compiles differently once that helper changes: its old outcome must not come back."""
    from kdiff.sandbox.launches import Launch, ResourceCache
    (tmp_path / "helpers.py").write_text("BLOCK = 64\n")
    kernels = tmp_path / "kernels.py"
    kernels.write_text("from helpers import BLOCK\n")
    launch = Launch(module="kdiff_kernels", file=str(kernels), qualname="kernel")

    def key() -> str | None:  # a cache as the next candidate's judging opens it
        return ResourceCache("owner", tmp_path / "cache").key(launch, "sm_90")
    keys = [key()]
    (tmp_path / "helpers.py").write_text("BLOCK = 128\n")
    keys.append(key())
    kernels.write_text("from helpers import BLOCK\nimport kdiff.kernels.mamba3.ops\n")
    keys.append(key())
    assert None not in keys and len(set(keys)) == 3, keys


def test_a_launch_file_the_judge_cannot_read_has_no_cache_key(tmp_path):
    """The worker names the file of each launch: one that links to /dev/zero is not read
    (it was, whole, to hash it: MemoryError in the judge)."""
    from kdiff.sandbox.launches import Launch, ResourceCache
    (tmp_path / "zero.py").symlink_to("/dev/zero")
    launch = Launch(module="kdiff_x", file=str(tmp_path / "zero.py"), qualname="kernel")
    assert ResourceCache("owner", tmp_path).key(launch, "sm_100") is None


# Forges its own compile results, with a kernel the judge can build a module of (BLOCK a
# literal constexpr) or cannot (BLOCK computed at import).
SELF_FORGER = """
import json, os
from pathlib import Path

import torch
import torch.nn as nn
import triton
import triton.language as tl

if "TRITON_INTERPRET" not in os.environ and Path("request.json").is_file():
    with open("results.jsonl", "a") as out:
        for job in json.loads(Path("request.json").read_text()):
            fits = dict(FITS, target=job["target"], registers=1)
            out.write(json.dumps({"resources": fits}) + "\\n")
    os._exit(0)

BLOCK = tl.constexpr({block})


@triton.jit
def double_kernel(x_ptr, out_ptr, n):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        double_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel())
        return out
""".replace("FITS", repr(FITS))


@pytest.mark.parametrize("block,status", [("64", Status.PASS), ('int("64")', Status.ERROR)],
                         ids=["a module the judge builds", "one it cannot build"])
def test_a_kernel_s_word_on_its_own_fit_is_not_taken(tmp_path, monkeypatch, block, status):
    """The judge compiles a kernel from its own module of the file where it can, so the
    forgery never runs; where it cannot, the module's "fits" leaves RES-02 undecided."""
    monkeypatch.setenv("KDIFF_CACHE", str(tmp_path / "cache"))
    candidate = tmp_path / "self_forger.py"
    candidate.write_text(SELF_FORGER.replace("{block}", block))
    problem = HERE / "fixtures" / "kernelbench_checkout" / "KernelBench" / "level1" / \
        "1_Double.py"
    with CandidateProcess(problem, candidate) as process:
        ctx = GateContext(load_problem(problem), process, GateOptions(targets=("sm_100",)))
        result = ResourceBudget().run(ctx)
    assert result.status is status, result.detail
    if status is Status.PASS:
        assert "double_kernel: shared" in result.detail and " 1 regs" not in result.detail
    else:
        assert "only the kernel's own module reported" in result.detail, result.detail
        assert "BLOCK, which is not a constant" in result.detail, result.detail


# A kernel file and another of the same kernel's name and parameters whose tl.dot needs 1024
# columns of sm_100's tensor memory; a compiler child that reports those columns from the
# module it is sent (as Triton does, without compiling: tests/fixtures/cross_candidate has
# the run that compiled them).
FITTING = """import triton
import triton.language as tl


@triton.jit
def double_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offsets, tl.load(x_ptr + offsets) * 2)
"""
OVER_BUDGET = FITTING.replace("tl.load(x_ptr + offsets) * 2", "tl.dot(x_ptr, y_ptr)")
COLUMNS_CHILD = """
import json, sys
jobs = json.load(open(sys.argv[1]))
fits = json.loads(sys.argv[3])
with open(sys.argv[2], "a") as out:
    for job in jobs:
        columns = 1024 if "tl.dot" in open(job["launch"]["file"]).read() else 0
        out.write(json.dumps({"resources": {"target": job["target"], **fits,
                                            "tmem_columns": columns}}) + "\\n")
"""


def test_a_compile_result_is_kept_under_the_module_compiled(tmp_path, monkeypatch):
    """A worker names its launches' files, and one in its own folder can change between the
    judge's readings of it: the cache key was taken from the first, the module compiled from a
    later one, and the over-budget result was kept, for every candidate, under the digest of a
    kernel that fits (the run in tests/fixtures/cross_candidate/runs/
    poisons_the_resource_cache rejected the honest kernel judged next)."""
    import json
    import subprocess
    import sys
    from types import SimpleNamespace

    from kdiff.sandbox.launches import Launch, ResourceCache, compile_launches
    monkeypatch.setenv("KDIFF_CACHE", str(tmp_path / "cache"))
    (tmp_path / "victim").mkdir()
    (tmp_path / "worker").mkdir()
    victim, copy = tmp_path / "victim" / "kernel.py", tmp_path / "worker" / "k.py"
    victim.write_text(FITTING)
    copy.write_text(FITTING)

    def start(argv, env, log, cwd):
        return subprocess.Popen([sys.executable, "-c", COLUMNS_CHILD, *argv, json.dumps(FITS)],
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                cwd=str(cwd))

    class Swapping:
        """The hostile worker's side: its copy changes once the cache has been asked."""

        candidate = copy
        writes_confined = True

        def compile_launches(self, jobs, stop=None, **options):
            copy.write_text(OVER_BUDGET)
            return compile_launches(jobs, timeout=30, start=start, folder=tmp_path, stop=stop,
                                    **options)

    launch = Launch(module="kdiff_k", file=str(copy), qualname="double_kernel")
    ResourceBudget().resources(SimpleNamespace(candidate=Swapping()), [launch], ["sm_100"])
    honest = Launch(module="kdiff_kernel", file=str(victim), qualname="double_kernel")
    kept = ResourceCache("honest").get(honest, "sm_100")
    assert kept is None or kept["resources"]["tmem_columns"] == 0, kept
