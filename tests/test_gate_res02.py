"""RES-02 resource budget: three states on the corpus (the honest 64x128 Triton matmul passes;
the 128x1024 tile fails on sm_100's tensor memory; the wrapper that keeps a workspace per call
leaks; KernelBench v0.1's native check accepts all three), the sm_100 compile of the wide
tile on a machine without a GPU, the budget arithmetic, and the kernels of compiled CUDA
extensions (judged from what cuobjdump reads; on a GPU, the corpus's load_inline Swish)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from kdiff.data.model import Case, Status, Verdict
from kdiff.gates import res02_resources
from kdiff.gates.extension_resources import ExtensionKernel, ResourceUsage, find_cuobjdump
from kdiff.gates.res02_resources import LIMITS, ResourceBudget, extension_violations, violations
from kdiff.judging.context import GateOptions
from kdiff.judging.plugins import manager
from kdiff.judging.runconfig import RunConfig
from kdiff.sandbox.launches import KernelResources, Launch, compile_launches, compiler_environment
from kdiff.verdicts.judge import judge_case

KERNELS = Path(__file__).resolve().parents[1] / "kernels"
PROBLEMS = KERNELS / "KernelBench" / "level1"
WIDE_TILE = KERNELS / "runs" / "redteam" / "level_1_problem_40_sample_0_kernel.py"


def judge(problem: str, run: str) -> Verdict:
    pid = problem.split("_")[0]
    candidate = KERNELS / "runs" / run / f"level_1_problem_{pid}_sample_0_kernel.py"
    case = Case(f"{run}/{candidate.stem}", PROBLEMS / problem, candidate)
    return judge_case(case, RunConfig(native="kernelbench-v0.1", gates=["RES-02"]), manager())


@pytest.mark.parametrize("problem,run,signature", [
    ("40_Matmul_wide_output.py", "controls", None),
    ("40_Matmul_wide_output.py", "redteam", "tmem_over_budget"),
    ("41_Swish.py", "redteam", "memory_leak"),
], ids=["honest-64x128", "tile-128x1024", "workspace-leak"])
def test_three_states(problem: str, run: str, signature: str | None):
    verdict = judge(problem, run)
    assert verdict.native.accept is True, verdict.native.reason
    result = verdict.gates["RES-02"]
    if signature is None:
        assert result.status is Status.PASS, result.detail
        assert "sm_90: 1 kernel(s) fit" in result.detail and "sm_100: 1 kernel(s) fit" \
            in result.detail, result.detail
    else:
        assert result.status is Status.FAIL, result.detail
        assert result.signature == signature, result.detail


def test_a_failure_the_cache_holds_fails_again(tmp_path, monkeypatch):
    """The second run of a failing kernel reads sm_100's failure from the resource cache (its
    sm_90 compile was stopped, so nothing of it is cached) and fails the same way."""
    monkeypatch.setenv("KDIFF_CACHE", str(tmp_path))
    first, again = (judge("40_Matmul_wide_output.py", "redteam").gates["RES-02"]
                    for _ in range(2))
    assert first.status is again.status is Status.FAIL, again.detail
    assert first.signature == again.signature == "tmem_over_budget"
    assert first.detail == again.detail


def wide_tile_launch() -> Launch:
    """The red-team kernel's launch at the benchmark's shape, as the recorder writes it."""
    pointers = {n: "*fp32" for n in ("a_ptr", "b_ptr", "c_ptr")}
    ints = {n: "i32" for n in ("M", "N", "K", "stride_am", "stride_ak", "stride_bk",
                               "stride_bn", "stride_cm", "stride_cn")}
    tile = {"BLOCK_M": 128, "BLOCK_N": 1024, "BLOCK_K": 8}
    return Launch(module="loaded_candidate_wide_tile", file=str(WIDE_TILE),
                  qualname="matmul_kernel",
                  signature={**pointers, **ints, **{n: "constexpr" for n in tile}},
                  constexprs=tile)


def test_sm100_compile_of_wide_tile_needs_1024_tmem_columns():
    """No GPU needed: Triton compiles for sm_100 from the kernel's source."""
    [outcome] = compile_launches([(wide_tile_launch(), "sm_100")])
    assert "resources" in outcome, outcome
    res = KernelResources(**outcome["resources"])
    assert res.tmem_columns == 1024  # a 128 x 1024 fp32 accumulator, one column per element
    found = violations(res, LIMITS["sm_100"])
    assert [v.signature for v in found] == ["tmem_over_budget"], found


HERE = Path(__file__).resolve().parent
RESOURCES = HERE / "fixtures" / "resources"


def assert_variant_judged(problem: Path, fixture: str, change: tuple[str, str],
                          signature: str | None, tmp_path: Path) -> None:
    """The fixture with its first `change[0]` made `change[1]`, judged by RES-02: accepted by
    the native check, and failing with `signature` (None: passing)."""
    candidate = tmp_path / "candidate.py"
    candidate.write_text((RESOURCES / fixture).read_text().replace(*change, 1))
    verdict = judge_case(Case(candidate.stem, problem, candidate),
                         RunConfig(native="kernelbench-v0.1", gates=["RES-02"]), manager())
    assert verdict.native.accept is True, verdict.native.reason
    result = verdict.gates["RES-02"]
    assert result.signature == signature, result.detail
    assert result.status is (Status.PASS if signature is None else Status.FAIL), result.detail


@pytest.mark.parametrize("launch,signature", [
    ('{"num_warps": 16}', None),
    ('{"num_warps": 16, "maxnreg": 255}', "registers_over_budget"),
], ids=["uncapped", "maxnreg-255"])
def test_registers_three_states(launch: str, signature: str | None, tmp_path: Path):
    """One kernel at 16 warps: uncapped, ptxas fits it to the block; with `maxnreg=255` its
    block needs twice a GPU's registers. The native check (the interpreter) accepts both."""
    assert_variant_judged(RESOURCES / "scale_by_sum.py", "scale_by_sum_kernel.py",
                          ('LAUNCH = {"num_warps": 16}', f"LAUNCH = {launch}"), signature,
                          tmp_path)


@pytest.mark.parametrize("helper,signature", [("@triton.jit\ndef twice", None),
                                              ("def twice", "does_not_compile")],
                         ids=["jit-helper", "python-helper"])
def test_a_kernel_only_the_interpreter_runs_does_not_compile(helper: str,
                                                             signature: str | None,
                                                             tmp_path: Path):
    """A kernel calling a plain Python function runs through the interpreter (the native
    check accepts it on the CPU) and no GPU's compiler takes it; with the helper a Triton
    function it compiles and fits."""
    assert_variant_judged(HERE / "hostile" / "problem.py", "doubles_through_python.py",
                          ("def twice", helper), signature, tmp_path)


def test_a_name_absent_from_triton_in_a_branch_not_taken_leaves_the_kernel_judged(
        tmp_path: Path):
    """`tl.libdevice.trunc` (Triton 2's path) in a constexpr branch the launch does not take:
    the judge's module keeps it (no compiler reaches it), so RES-02 decides from its own
    compile; it had left the kernel undecided (only the candidate's module compiled)."""
    assert_variant_judged(HERE / "hostile" / "problem.py", "absent_name_branch.py",
                          ("ROUNDING = False", "ROUNDING = False"), None, tmp_path)


# Variants of scale_by_sum.py whose kernel the judge once refused or could not compile, so
# that RES-02 was undecided or an ERROR. Each is judged now: it fits uncapped, and is over the
# registers with `maxnreg=255`.
JUDGED_VARIANTS = [
    # A helper defined by a switch on Triton's version: the judge builds the kernel both ways,
    # and the other way names `tl.libdevice` (absent from Triton 3), which no process under
    # this Triton ran (mamba_ssm's selective_state_update, whose own module is not importable
    # in the compiler child, the same). That way is left out; the way this Triton builds is
    # judged.
    pytest.param("version_switch_helper.py", id="another_triton_s_branch"),
    # `triton.next_power_of_2` in a kernel body (flash-attention's rotary kernel): Triton runs
    # it at compile time on constants; the judge had refused `triton` outside
    # `triton.language`.
    pytest.param("next_power_of_two_block.py", id="compile_time_helper"),
    # `triton.language.standard._log2` in a kernel body (lmdeploy's bitonic top-k): refused as
    # a private name, while the file's own module did not import in the compiler child. A
    # private name of Triton's language that is a ConstexprFunction or JITFunction resolves.
    pytest.param("private_triton_helper.py", id="private_language_helper"),
    # A constexpr given as a member of an IntEnum (lmdeploy's QuantPolicy): the worker sent the
    # member itself, which the judge takes from no library in a reply, and RES-02 (and CMP-03)
    # read the worker as crashed ("exited with status 0 during `launches`"). Its value travels.
    pytest.param("enum_constexpr.py", id="enum_constexpr"),
    # Pointers annotated `tl.pointer_type(tl.float32)` (torchtitan's MoE metadata kernels):
    # refused as "an annotation that is not a name", while the file's own module did not
    # import in the compiler child. A Triton type built from constants is kept as written.
    pytest.param("typed_pointer_annotation.py", id="typed_pointer_annotation"),
    # `triton.jit(repr=kernel_name, launch_metadata=hook)` (aiter's softmax, triton_kernels'
    # swiglu): a keyword that is not a constant made the kernel no jit kernel to the judge
    # ("not a top-level triton.jit kernel"). Naming and profiling hooks are dropped.
    pytest.param("named_by_a_function.py", id="naming_hooks"),
    # `f = triton.jit(f)` after a plain definition, then `f = triton.heuristics(...)(f)`
    # (unsloth's RoPE kernels): no decorator made it a kernel to the judge ("not a top-level
    # triton.jit kernel"). The call is read as the decorator; the heuristic is dropped.
    pytest.param("jitted_by_a_call.py", id="jitted_by_a_call"),
]


@pytest.mark.parametrize("variant", JUDGED_VARIANTS)
@pytest.mark.parametrize("launch,signature", [
    ('{"num_warps": 16}', None),
    ('{"num_warps": 16, "maxnreg": 255}', "registers_over_budget"),
], ids=["uncapped", "maxnreg-255"])
def test_a_kernel_the_judge_once_refused_is_judged_for_its_registers(
        variant: str, launch: str, signature: str | None, tmp_path: Path):
    assert_variant_judged(RESOURCES / "scale_by_sum.py", variant,
                          ('LAUNCH = {"num_warps": 16}', f"LAUNCH = {launch}"), signature,
                          tmp_path)


@pytest.mark.parametrize("second,signature", [
    ('{"BM": 32, "BN": 32, "BK": 32}, num_stages=2, num_warps=4', None),
    ('{"BM": 256, "BN": 128, "BK": 64}, num_stages=4, num_warps=8', "shared_over_budget"),
], ids=["a_config_fits", "none_fits"])
def test_an_autotuner_s_configs_are_alternatives_on_the_cpu(second: str, signature: str | None,
                                                             tmp_path: Path):
    """On the CPU the untimed autotuner runs its first config only, and RES-02 judged that
    config alone: a first config out of shared memory (mamba_ssm's fp32 `_bmm_chunk_fwd`)
    failed `shared_over_budget` where a GPU's autotuner drops it and times the others. Every
    config its pruning keeps is now recorded as an alternative, also after another autotuned
    kernel's 36 configs (more than MAX_RECORDED); where none fits it still fails."""
    assert_variant_judged(RESOURCES / "matmul.py", "autotuned_matmul.py",
                          ('{"BM": 32, "BN": 32, "BK": 32}, num_stages=2, num_warps=4', second),
                          signature, tmp_path)


FULL_COMPILE = """
import contextlib, dataclasses, io, json, sys
import triton
from kdiff.sandbox.launches import Launch, _decode_constexpr, _find_kernel, parse_target
job = json.loads(sys.argv[1])
launch = Launch(**job["launch"])
src = triton.compiler.ASTSource(fn=_find_kernel(launch), signature=launch.signature,
    constexprs={k: _decode_constexpr(v) for k, v in launch.constexprs.items()})
log = io.StringIO()
with contextlib.redirect_stdout(log):
    md = triton.compile(src, target=parse_target(job["target"]), options=launch.options).metadata
print(json.dumps([md.shared, md.tmem_size, md.num_warps, log.getvalue()]))
"""


def full_compile(launch: Launch, target: str) -> tuple[int, int, int, str] | None:
    """Triton's whole pipeline, ptxas included (its log): shared bytes, tensor-memory
    columns, warps and the log; None where it does not compile."""
    env = {**compiler_environment(), "TRITON_DUMP_PTXAS_LOG": "1"}
    with tempfile.TemporaryDirectory() as cache:
        env["TRITON_CACHE_DIR"] = cache
        out = subprocess.run([sys.executable, "-c", FULL_COMPILE,
                              json.dumps({"launch": asdict(launch), "target": target})],
                             capture_output=True, text=True, env=env)
    if out.returncode != 0:
        return None
    return tuple(json.loads(out.stdout.splitlines()[-1]))  # type: ignore[return-value]


def scale_by_sum_launch(**options: int) -> Launch:
    return Launch(module="loaded_candidate_scale_by_sum",
                  file=str(RESOURCES / "scale_by_sum_kernel.py"),
                  qualname="scale_by_sum_kernel",
                  signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "BLOCK": "constexpr"},
                  constexprs={"BLOCK": 65536}, options={"num_warps": 16, **options})


def test_without_maxnreg_ptxas_fits_registers_to_the_block():
    """Why RES-02 reads registers only where a launch sets `maxnreg`: Triton's PTX requires
    its block size (.reqntid), and ptxas keeps the registers within the block's share,
    spilling the rest; with `maxnreg=255` it does not."""
    limits = LIMITS["sm_90"]
    compiled = full_compile(scale_by_sum_launch(), "sm_90")
    assert compiled is not None
    log = compiled[3]
    [registers] = map(int, re.findall(r"Used (\d+) registers", log))
    assert registers * 16 * 32 <= limits.registers_per_block, log
    assert re.search(r"[1-9]\d* bytes spill stores", log), log  # the pressure was there
    [outcome] = compile_launches([(scale_by_sum_launch(maxnreg=255), "sm_90")])
    assert violations(KernelResources(**outcome["resources"]), limits), outcome


@pytest.mark.slow
@pytest.mark.parametrize("launch,target", [
    (triu_matmul_launch := Launch(
        module="loaded_candidate_triu", qualname="triu_matmul_kernel",
        file=str(KERNELS / "runs" / "controls" / "level_1_problem_20_sample_0_kernel.py"),
        signature={**{n: "*fp32" for n in ("a_ptr", "b_ptr", "c_ptr")},
                   **{n: "i32" for n in ("N", "stride_am", "stride_bk", "stride_cm")},
                   **{n: "constexpr" for n in ("stride_ak", "stride_bn", "stride_cn", "BLOCK",
                                               "BLOCK_K")}},
        constexprs={"stride_ak": 1, "stride_bn": 1, "stride_cn": 1, "BLOCK": 128,
                    "BLOCK_K": 64}, options={"num_warps": 8}), "sm_90"),
    (triu_matmul_launch, "sm_100"),
    (scale_by_sum_launch(), "sm_90"),
    (wide_tile_launch(), "sm_100"),
], ids=["pipelined-matmul-sm90", "pipelined-matmul-sm100", "reduction-sm90",
        "tmem-tile-sm100"])
def test_the_allocation_is_what_the_whole_compile_reads(launch: Launch, target: str):
    """RES-02 stops Triton's compile at its allocation passes: the shared memory, tensor
    memory and warps read there are those of the whole pipeline, on the Triton installed
    (which may refuse a launch both ways: Triton 3.6 has no tl.dot with K < 16)."""
    [outcome] = compile_launches([(launch, target)])
    whole = full_compile(launch, target)
    if whole is None:
        assert "does not compile" in outcome["error"], outcome
        return
    res = KernelResources(**outcome["resources"])
    assert (res.shared_bytes, res.tmem_columns, res.num_warps) == whole[:3]


def test_tensor_memory_allocated_in_inline_assembly_is_counted():
    """The allocator does not see a `tcgen05.alloc` in inline assembly; the judge reads it
    from the kernel's IR."""
    launch = Launch(module="loaded_candidate_tmem", file=str(RESOURCES / "tmem_inline_asm.py"),
                    qualname="grabs_tensor_memory",
                    signature={"x_ptr": "*i32", "BLOCK": "constexpr"}, constexprs={"BLOCK": 128})
    [outcome] = compile_launches([(launch, "sm_100")])
    assert KernelResources(**outcome["resources"]).tmem_columns == 512, outcome


def resources(target: str, shared: int = 0, tmem: int = 0, regs: int | None = 32,
              warps: int = 4) -> KernelResources:
    return KernelResources(target, shared, tmem, warps, regs, 0, 0)


def test_limits_are_inclusive_and_per_target():
    sm90, sm100 = LIMITS["sm_90"], LIMITS["sm_100"]
    assert not violations(resources("sm_90", shared=232448), sm90)
    assert [v.signature for v in violations(resources("sm_90", shared=232449), sm90)] \
        == ["shared_over_budget"]
    assert not violations(resources("sm_90", tmem=1024), sm90)  # Hopper has no TMEM
    assert not violations(resources("sm_100", tmem=512), sm100)
    assert [v.signature for v in violations(resources("sm_100", tmem=1024), sm100)] \
        == ["tmem_over_budget"]
    # 128 registers x 32 threads = 4096 per warp; 16 warps use all 65536 of a block ...
    assert not violations(resources("sm_90", regs=128, warps=16), sm90)
    # ... and 129 round up to 4352 per warp (allocation unit 256): 69632 > 65536.
    assert [v.signature for v in violations(resources("sm_90", regs=129, warps=16), sm90)] \
        == ["registers_over_budget"]


def test_autotuner_configs_are_alternatives():
    """On hardware the autotuner drops a config that is out of resources: the launch fails
    only when no config fits."""
    gate = ResourceBudget()
    small, big = (Launch("m", "f.py", "k", {"x": "*fp32", "BLOCK": "constexpr"},
                         {"BLOCK": b}, tuned=["BLOCK"]) for b in (64, 4096))
    fits = {"resources": resources("sm_90", shared=65536).__dict__, "checked": True}
    over = {"resources": resources("sm_90", shared=1 << 20).__dict__}
    failure, *_ = gate.judge_target([small, big], [fits, over], "sm_90")
    assert failure is None
    failure, *_ = gate.judge_target([small, big], [over, over], "sm_90")
    assert failure is not None and failure.signature == "shared_over_budget"
    untuned = Launch("m", "f.py", "k", {"x": "*fp32", "BLOCK": "constexpr"}, {"BLOCK": 4096})
    failure, *_ = gate.judge_target([small, untuned], [fits, over], "sm_90")
    assert failure is not None, "a launch no autotuner chose has no alternative"
    # A fit only the kernel's module reported: the launch is neither failed nor passed.
    failure, _, _, unverified = gate.judge_target(
        [small, big], [{**fits, "checked": False, "unchecked": "why"}, over], "sm_90")
    assert failure is None and len(unverified) == 1 and unverified[0].endswith("why")


def test_launch_is_described_as_triton_specialises_it():
    """Tensors become pointer types, an int equal to 1 a constexpr (Triton's specialisation),
    constexpr values and launch options are kept."""
    import triton
    import triton.language as tl

    from kdiff.sandbox.launches import _interpreted_params, _jit_params, describe_launch

    @triton.jit
    def scale(x_ptr, n, stride, BLOCK: tl.constexpr):
        pass

    x = torch.zeros(8, dtype=torch.float16)
    params = _jit_params(scale) if hasattr(scale, "params") else _interpreted_params(scale)
    launch = describe_launch(params, (x, 8, 1), {"BLOCK": 64, "num_warps": 2})
    assert launch.signature == {"x_ptr": "*fp16", "n": "i32", "stride": "constexpr",
                                "BLOCK": "constexpr"}
    assert launch.constexprs == {"stride": 1, "BLOCK": 64}
    assert launch.options == {"num_warps": 2}
    assert launch.unavailable == "defined inside a function: it cannot be imported by name"


def extension_kernel(arch: str | None, shared: int = 0, regs: int = 32, stack: int = 0,
                     function: str = "_Z1kPf") -> ExtensionKernel:
    return ExtensionKernel("ext.so", arch, function, regs, shared, stack, 0)


def test_extension_limits_are_the_static_ones():
    """48 KiB of static shared memory per block (sm_90 and sm_100 binaries count the driver's
    1 KiB reserve in it) and 255 registers per thread."""
    for arch, static in (("sm_80", 49152), ("sm_90", 50176), ("sm_100", 50176)):
        assert not extension_violations(extension_kernel(arch, shared=static), LIMITS[arch])
        assert [v.signature for v in extension_violations(
            extension_kernel(arch, shared=static + 1), LIMITS[arch])] == ["shared_over_budget"]
    assert not extension_violations(extension_kernel("sm_90", regs=255), LIMITS["sm_90"])
    assert [v.signature for v in extension_violations(extension_kernel("sm_90", regs=256),
                                                      LIMITS["sm_90"])] \
        == ["registers_over_budget"]


def test_extension_part_judges_each_architecture_the_binary_holds():
    gate = ResourceBudget()
    usage = ResourceUsage([extension_kernel("sm_90", shared=17408),
                            extension_kernel("sm_90", stack=1024, function="_Z5spillv"),
                            extension_kernel("sm_75")], ptx_only=["sm_100"])
    part = gate.judge_extensions([usage], [], ["sm_90", "sm_100"])
    assert part.failure is None
    assert "sm_90: 2 kernel(s) fit" in part.note and "stack 1024 B" in part.note, part.note
    assert "sm_75: 1 kernel(s), no limits known: not judged" in part.note, part.note
    assert "PTX only for sm_100" in part.note and "not built for sm_100" in part.note, part.note
    over = ResourceUsage([extension_kernel("sm_90", shared=50177)])
    part = gate.judge_extensions([usage, over], [], ["sm_90"])
    assert part.failure is not None and part.failure.signature == "shared_over_budget"
    assert "sm_90: _Z1kPf in ext.so: static shared memory 50177 B" in part.failure.detail
    # torch builds Hopper extensions for sm_90a: sm_90's limits, and sm_90 counts as built
    part = gate.judge_extensions([ResourceUsage([extension_kernel("sm_90a", shared=50177)])],
                                 [], ["sm_90"])
    assert part.failure is not None and part.failure.signature == "shared_over_budget"
    part = gate.judge_extensions([ResourceUsage([extension_kernel("sm_90a")])], [],
                                 ["sm_90", "sm_100"])
    assert "sm_90a: 1 kernel(s) fit" in part.note and "not built for sm_100" in part.note \
        and "not built for sm_90," not in part.note, part.note
    part = gate.judge_extensions([], ["cuobjdump exited with status 1 on x.so"], ["sm_90"])
    assert part.failure is None and part.note.startswith("compiled extensions: skipped"), \
        part.note


def worker_folder(workdir: Path) -> SimpleNamespace:
    """The part of a GateContext the extension part reads: the worker's folder, the targets."""
    return SimpleNamespace(candidate=SimpleNamespace(workdir=workdir),
                           options=SimpleNamespace(targets=["sm_90", "sm_100"]))


def test_extension_part_reads_what_the_worker_folder_holds(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch):
    gate = ResourceBudget()
    assert gate.extensions(worker_folder(tmp_path)).note == "compiled extensions: none built"
    nvcc = shutil.which("nvcc")
    if not nvcc or find_cuobjdump() is None:
        pytest.skip("needs nvcc and cuobjdump (a CUDA toolkit; no GPU needed)")
    launcher = tmp_path / "triton" / "launcher"  # host code only, as Triton's launchers are
    launcher.mkdir(parents=True)
    (launcher / "launcher.cpp").write_text("int launch() { return 0; }\n")
    subprocess.run([nvcc, "-shared", "-Xcompiler", "-fPIC", "-o", str(launcher / "launcher.so"),
                    str(launcher / "launcher.cpp")], check=True, capture_output=True)
    assert gate.extensions(worker_folder(tmp_path)).note == \
        "compiled extensions: no CUDA kernel in the 1 shared object(s) built"
    build = tmp_path / "torch_extensions" / "probe"
    build.mkdir(parents=True)
    (build / "probe.cu").write_text("__global__ void k(float* y) { __shared__ float b[256]; "
                                    "b[threadIdx.x] = 1; __syncthreads(); "
                                    "y[threadIdx.x] = b[255 - threadIdx.x]; }\n")
    subprocess.run([nvcc, "-shared", "-Xcompiler", "-fPIC", "-arch=sm_90", "-o",
                    str(build / "probe.so"), str(build / "probe.cu")], check=True,
                   capture_output=True)
    note = gate.extensions(worker_folder(tmp_path)).note
    assert note.startswith("compiled extensions: sm_90: 1 kernel(s) fit (_Z1kPf: ") and \
        "static shared 2048 B" in note and note.endswith("; not built for sm_100"), note
    monkeypatch.setattr(res02_resources, "find_cuobjdump", lambda: None)
    assert "skipped, 2 shared object(s) built and no cuobjdump" in \
        gate.extensions(worker_folder(tmp_path)).note


@pytest.mark.gpu
@pytest.mark.parametrize("run,sample", [("controls", 0), ("redteam", 1)],
                         ids=["ieee-swish", "fast-math-swish"])
def test_load_inline_extension_kernels_are_read_on_a_gpu(run: str, sample: int):
    """The corpus's CUDA Swish (load_inline): RES-02 reads every kernel of the extension it
    built, for the GPU's architecture."""
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    candidate = KERNELS / "runs" / run / f"level_1_problem_41_sample_{sample}_kernel.py"
    case = Case(f"{run}/{candidate.stem}", PROBLEMS / "41_Swish.py", candidate)
    config = RunConfig(native="kernelbench", gates=["RES-02"])
    config.gate_options.device = "cuda"
    verdict = judge_case(case, config, manager())
    assert verdict.native.accept is True, verdict.native.reason
    result = verdict.gates["RES-02"]
    assert result.status is Status.PASS, result.detail
    major, minor = torch.cuda.get_device_capability()
    # AT_DISPATCH over double, float, half and bfloat16: four instantiations of swish_kernel.
    # torch builds for the arch-specific variant on Hopper (sm_90a), judged as sm_90
    assert re.search(rf"compiled extensions: sm_{major}{minor}a?: 4 kernel\(s\) fit",
                     result.detail), result.detail
    assert f"not built for sm_{major}{minor}" not in result.detail, result.detail


def test_the_compiler_child_keeps_the_workers_fp_fusion(monkeypatch):
    """RES-02 measures the kernels the worker runs: the compiler child's environment pins
    Triton's fp-fusion default as the worker's does, and keeps a setting the user made."""
    monkeypatch.delenv("TRITON_DEFAULT_FP_FUSION", raising=False)
    assert compiler_environment()["TRITON_DEFAULT_FP_FUSION"] == "1"
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "0")
    assert compiler_environment()["TRITON_DEFAULT_FP_FUSION"] == "0"


def test_compiling_stops_once_a_target_fails():
    """The wide tile's sm_100 outcome is enough for the verdict: a `stop` that says so kills
    the child before its sm_90 compile (15.6 s of ptxas spilling, against 3 s for sm_100)."""
    seen = []

    def stop(partial):
        seen.append([outcome is not None for outcome in partial])
        return "not compiled: sm_100 already fails" if partial[0] is not None else None

    sm100, sm90 = compile_launches([(wide_tile_launch(), "sm_100"),
                                    (wide_tile_launch(), "sm_90")], stop=stop)
    assert KernelResources(**sm100["resources"]).tmem_columns == 1024
    assert sm90 == {"error": "not compiled: sm_100 already fails", "timeout": False,
                    "cacheable": False, "stopped": True, "checked": True}
    assert seen[-1] == [True, False]  # stopped as soon as the first result was read


def test_gate_compiles_the_next_target_only_while_none_fails(tmp_path: Path, monkeypatch):
    """The gate's jobs go target by target, sm_100 first; its stop fires when a target's
    kernels are all measured and one exceeds its limits, and not before."""
    monkeypatch.setenv("KDIFF_CACHE", str(tmp_path))  # nothing cached: every job compiles
    launch = wide_tile_launch()
    measured = {"sm_100": resources("sm_100", tmem=1024), "sm_90": resources("sm_90")}
    compiled = []

    def compile_in_order(jobs, stop, modules=None):  # the child's results, one at a time
        outcomes = [None] * len(jobs)
        for i, (_, target) in enumerate(jobs):
            compiled.append(target)
            outcomes[i] = {"resources": asdict(measured[target]), "cacheable": False}
            reason = stop(outcomes)
            if reason:
                return [o or {"error": reason, "timeout": False, "cacheable": False}
                        for o in outcomes]
        return outcomes

    ctx = SimpleNamespace(candidate=SimpleNamespace(compile_launches=compile_in_order,
                                                    candidate=WIDE_TILE, writes_confined=True))
    gate = ResourceBudget()
    targets = list(GateOptions().targets)
    assert targets == ["sm_100", "sm_90"]
    outcomes = gate.resources(ctx, [launch], targets)
    assert compiled == ["sm_100"]
    assert outcomes[(launch.key(), "sm_90")]["error"].startswith("not compiled")
    measured["sm_100"] = resources("sm_100", tmem=512)  # fits: sm_90 is compiled too
    compiled.clear()
    gate.resources(ctx, [launch], targets)
    assert compiled == ["sm_100", "sm_90"]


SWITCHED_KERNEL = '''import os
import triton
import triton.language as tl
if os.environ.get("WIDE") == "1":
    BLOCK = tl.constexpr(128)
else:
    BLOCK = tl.constexpr(32)


@triton.jit
def square(x_ptr, out_ptr):
    rows = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + rows[:, None] * BLOCK + rows[None, :])
    tl.store(out_ptr + rows[:, None] * BLOCK + rows[None, :], tl.dot(x, x))
'''


def test_a_kernel_under_a_module_level_switch_is_judged_at_the_most_any_way_needs(tmp_path):
    """The candidate's process may have taken either branch (an environment variable it can
    set itself): RES-02 compiles the kernel both ways and judges the larger tile's needs."""
    path = tmp_path / "switched.py"
    path.write_text(SWITCHED_KERNEL)
    launch = Launch(module="loaded_candidate_switched", file=str(path), qualname="square",
                    signature={"x_ptr": "*fp16", "out_ptr": "*fp32"}, constexprs={})
    [outcome] = compile_launches([(launch, "sm_90")])
    assert outcome["checked"] and "resources" in outcome, outcome
    one_way = tmp_path / "narrow.py"  # the narrow branch alone
    one_way.write_text(SWITCHED_KERNEL.replace(
        'if os.environ.get("WIDE") == "1":\n    BLOCK = tl.constexpr(128)\nelse:\n    ', ""))
    assert "128" not in one_way.read_text()
    [narrow_outcome] = compile_launches([(Launch(**{**asdict(launch), "file": str(one_way)}),
                                          "sm_90")])
    assert outcome["resources"]["shared_bytes"] > narrow_outcome["resources"]["shared_bytes"]
    from kdiff.sandbox.launches import most_needed
    a, b = ({"resources": {**outcome["resources"], key: value}, "cacheable": True}
            for key, value in (("registers", 40), ("registers", 90)))
    assert most_needed([a, b])["resources"]["registers"] == 90
    assert most_needed([a, {"error": "did not compile", "timeout": False}])["error"]


def test_compiles_past_the_cases_wall_budget_are_its_failure_not_unmeasured(tmp_path: Path):
    """The launches a worker reports are its word, as many as it likes; the judge compiles
    them under the case's wall budget, and a launch left past it fails `case_timeout` (a
    launch "not measured" passes: a candidate could list slow decoys before its over-budget
    one). The worker here has spent its budget: nothing is compiled, and nothing fits."""
    from kdiff.sandbox.process import CandidateProcess

    slow = tmp_path / "slow.py"
    shutil.copy(Path(__file__).parent / "hostile" / "compiles_past_its_budget.py", slow)
    launches = [Launch(module="kdiff_slow", file=str(slow), qualname="double_kernel",
                       signature={"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
                       constexprs={"BLOCK": 256, "UNROLL": 4000 + i}) for i in range(3)]
    with CandidateProcess(Path(__file__).parent / "hostile" / "problem.py", slow) as proc:
        proc._deadline = 0.0  # time.monotonic() long past: a spent budget
        outcomes = proc.compile_launches([(launch, "sm_90") for launch in launches])
    assert all(o.get("over_budget") and "resources" not in o for o in outcomes), outcomes

    listed = {"launches": [{"launch": asdict(launch)} for launch in launches]}
    candidate = SimpleNamespace(
        request=lambda cmd, **_: listed, candidate=slow, writes_confined=False,
        limits=SimpleNamespace(case_timeout=20.0),
        compile_launches=lambda jobs, **_: [outcomes[0]] * len(jobs))
    ctx = SimpleNamespace(candidate=candidate, options=GateOptions())
    part = ResourceBudget().compiled(ctx)
    assert part.failure is not None and part.failure.signature == "case_timeout", part
    assert "6 of 6 compiles left" in part.failure.detail


TILE_LAUNCH = Launch(module="kdiff_tile", file=str(WIDE_TILE), qualname="matmul_kernel")


def compiled_part(launch: Launch, outcome: dict):
    """RES-02's compiled part for a worker that recorded `launch`, every compile of which
    came back as `outcome`."""
    candidate = SimpleNamespace(
        request=lambda cmd, **_: {"launches": [{"launch": asdict(launch)}]},
        candidate=WIDE_TILE, writes_confined=False, limits=SimpleNamespace(case_timeout=3600.0),
        compile_launches=lambda jobs, **_: [dict(outcome) for _ in jobs])
    return ResourceBudget().compiled(SimpleNamespace(candidate=candidate, options=GateOptions()))


def test_a_compile_past_its_deadline_is_a_fit_not_checked(tmp_path: Path):
    """How long a kernel takes to compile is its own to choose (an unrolled loop): the red
    team's over-budget tile, its compile past the per-kernel deadline, passed RES-02 as "not
    measured". Undecided now, never a pass."""
    late = {"error": "compiling did not finish within 300 s per kernel", "timeout": True,
            "cacheable": False}
    part = compiled_part(TILE_LAUNCH, late)
    assert part.failure is None and part.undecided is not None, part
    assert "did not finish within 300 s" in part.undecided


def test_a_compiler_child_killed_leaves_its_launches_a_fit_not_checked(tmp_path: Path):
    """A compile killed at its memory limit (a huge unrolled body is the kernel's to choose)
    was "not measured", which passes; here the child kills itself, as the out-of-memory
    killer would."""
    def start(argv, env, log, cwd):
        return subprocess.Popen([sys.executable, "-c", "import os; os.kill(os.getpid(), 9)"],
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                cwd=str(cwd))

    outcomes = compile_launches([(TILE_LAUNCH, "sm_100")], timeout=30, start=start,
                                folder=tmp_path)
    assert outcomes[0]["killed"] is True and "status -9" in outcomes[0]["error"], outcomes
    part = compiled_part(TILE_LAUNCH, outcomes[0])
    assert part.failure is None and part.undecided is not None, part
    assert "status -9" in part.undecided


def test_launches_none_of_which_compiles_leave_the_fit_not_checked():
    """Launches that ran, and not one of which the judge could compile (a compile error
    that is not Triton refusing the kernel): no fit was checked, so the gate is undecided.
    It passed on its other parts, with the compiled part "skipped"."""
    broken = {"error": "CompilationError: an error the compiler raised", "cacheable": True}
    part = compiled_part(TILE_LAUNCH, broken)
    assert part.failure is None and part.undecided is not None, part
    assert "none of 1 launch(es) could be compiled" in part.undecided
    assert "an error the compiler raised" in part.note
