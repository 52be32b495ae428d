"""Resources of the kernels in compiled CUDA extensions (kdiff.gates.extension_resources): the parser
on cuobjdump's documented output, the same numbers from a real fatbin where nvcc is at hand
(no GPU needed), a load_inline build on a GPU, and the flush-to-zero multiply the fast-math
red-team Swish compiles to."""
from __future__ import annotations

import ast
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

from kdiff.gates.extension_resources import (
    ExtensionKernel,
    base_arch,
    extension_objects,
    find_cuobjdump,
    parse_resource_usage,
    read_resource_usage,
)

RUNS = Path(__file__).resolve().parents[1] / "kernels" / "runs"
FAST_MATH_SWISH = RUNS / "redteam" / "level_1_problem_41_sample_1_kernel.py"
IEEE_SWISH = RUNS / "controls" / "level_1_problem_41_sample_0_kernel.py"

# `cuobjdump --dump-resource-usage` in its documented layout (CUDA Binary Utilities), as
# cuobjdump 13.1 printed it (trailing blanks trimmed) for a shared object nvcc 13.0 built from
# SOURCE below with -gencode arch=compute_90,code=[sm_90,compute_90] -gencode
# arch=compute_80,code=sm_80: one ELF image per SASS architecture for the CUDA runtime's own
# code (no function), one per architecture for SOURCE, and the PTX image, which carries no
# resource usage.
RESOURCE_USAGE = """
Fatbin elf code:
================
arch = sm_90
code version = [1,8]
host = linux
compile_size = 64bit

Resource usage:
 Common:
  GLOBAL:0

Fatbin elf code:
================
arch = sm_80
code version = [1,8]
host = linux
compile_size = 64bit

Resource usage:
 Common:
  GLOBAL:0

Fatbin elf code:
================
arch = sm_90
code version = [1,8]
host = linux
compile_size = 64bit

Resource usage:
 Common:
  GLOBAL:0
 Function _Z5spillPfi:
  REG:40 STACK:1024 SHARED:0 LOCAL:0 CONSTANT[0]:540 TEXTURE:0 SURFACE:0 SAMPLER:0
 Function _Z13shared_kernelPf:
  REG:12 STACK:0 SHARED:17408 LOCAL:0 CONSTANT[0]:536 TEXTURE:0 SURFACE:0 SAMPLER:0
 Function _Z5scalePKfS0_Pfii:
  REG:12 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:560 TEXTURE:0 SURFACE:0 SAMPLER:0

Fatbin ptx code:
================
arch = sm_90
code version = [9,0]
host = linux
compile_size = 64bit
compressed
ptxasOptions =

Fatbin elf code:
================
arch = sm_80
code version = [1,8]
host = linux
compile_size = 64bit

Resource usage:
 Common:
  GLOBAL:0
 Function _Z5spillPfi:
  REG:40 STACK:1024 SHARED:0 LOCAL:0 CONSTANT[0]:364 TEXTURE:0 SURFACE:0 SAMPLER:0
 Function _Z13shared_kernelPf:
  REG:10 STACK:0 SHARED:16384 LOCAL:0 CONSTANT[0]:360 TEXTURE:0 SURFACE:0 SAMPLER:0
 Function _Z5scalePKfS0_Pfii:
  REG:12 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:384 TEXTURE:0 SURFACE:0 SAMPLER:0
"""

SOURCE = r"""
__global__ void scale(const float* x, const float* s, float* y, int n, int d) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * s[i % d];
}
__global__ void shared_kernel(float* y) {
    __shared__ float buf[4096];  // 16 KiB of static shared memory
    buf[threadIdx.x] = threadIdx.x;
    __syncthreads();
    y[threadIdx.x] = buf[(threadIdx.x * 7) % 4096];
}
__global__ void spill(float* y, int n) {
    float a[256];  // indexed at run time: a 1 KiB stack frame
    for (int i = 0; i < 256; i++) a[i] = y[i * n];
    float s = 0;
    for (int i = 0; i < n; i++) s += a[(i * 13) % 256];
    y[threadIdx.x] = s;
}
"""


def by_name(kernels: list[ExtensionKernel]) -> dict[tuple[str | None, str], ExtensionKernel]:
    return {(k.arch, k.function): k for k in kernels}


def test_documented_output_gives_every_kernel_per_architecture():
    usage = parse_resource_usage(RESOURCE_USAGE, "ext.so")
    kernels = by_name(usage.kernels)
    assert len(usage.kernels) == 6  # 3 functions x 2 SASS archs; the runtime's images hold none
    assert kernels[("sm_90", "_Z13shared_kernelPf")] == ExtensionKernel(
        "ext.so", "sm_90", "_Z13shared_kernelPf", registers=12, shared_bytes=17408,
        stack_bytes=0, local_bytes=0)
    assert kernels[("sm_80", "_Z13shared_kernelPf")].shared_bytes == 16384
    assert kernels[("sm_80", "_Z5spillPfi")].stack_bytes == 1024
    assert usage.ptx_only == []  # the sm_90 PTX has sm_90 SASS beside it


def test_ptx_without_sass_and_a_bare_cubin_are_told_apart():
    ptx_image = RESOURCE_USAGE[RESOURCE_USAGE.index("Fatbin ptx code:"):]
    ptx_image = ptx_image[:ptx_image.index("Fatbin elf code:")]
    assert parse_resource_usage(ptx_image, "ext.so").ptx_only == ["sm_90"]
    # A cubin (nvcc -cubin -arch=sm_90, a 48 KiB static array) prints no image header.
    bare = ("\nResource usage:\n Common:\n  GLOBAL:0\n Function _Z1kPf:\n  REG:12 STACK:0 "
            "SHARED:50176 LOCAL:0 CONSTANT[0]:536 TEXTURE:0 SURFACE:0 SAMPLER:0\n")
    assert parse_resource_usage(bare, "k.cubin").kernels == [
        ExtensionKernel("k.cubin", None, "_Z1kPf", 12, 50176, 0, 0)]


def test_extension_objects_are_every_shared_object_under_the_folder(tmp_path: Path):
    (tmp_path / "torch_extensions" / "swish").mkdir(parents=True)
    built = tmp_path / "torch_extensions" / "swish" / "swish.so"
    built.write_bytes(b"")
    (tmp_path / "torch_extensions" / "swish" / "cuda.cuda.o").write_bytes(b"")
    (tmp_path / "libtorch_cuda.so").symlink_to(built)
    assert extension_objects(tmp_path) == [built]


def nvcc() -> str:
    from torch.utils.cpp_extension import CUDA_HOME
    found = shutil.which("nvcc") or (CUDA_HOME and shutil.which("nvcc", path=f"{CUDA_HOME}/bin"))
    if not found or find_cuobjdump() is None:
        pytest.skip("needs nvcc and cuobjdump (a CUDA toolkit; no GPU needed)")
    return found


def test_real_fatbin_gives_the_documented_numbers(tmp_path: Path):
    """nvcc compiles for targets it has no GPU for; cuobjdump reads the result."""
    source = tmp_path / "kernels.cu"
    source.write_text(SOURCE)
    library = tmp_path / "libkernels.so"
    subprocess.run([nvcc(), "-shared", "-Xcompiler", "-fPIC", "-gencode",
                    "arch=compute_90,code=sm_90", "-gencode", "arch=compute_80,code=sm_80",
                    "-o", str(library), str(source)], check=True, capture_output=True)
    usage = read_resource_usage(library, find_cuobjdump())
    kernels = by_name(usage.kernels)
    assert {arch for arch, _ in kernels} == {"sm_80", "sm_90"}
    assert kernels[("sm_80", "_Z13shared_kernelPf")].shared_bytes == 16384
    # From sm_90 on the function's window holds the driver's 1 KiB reserve as well.
    assert kernels[("sm_90", "_Z13shared_kernelPf")].shared_bytes == 16384 + 1024
    assert all(k.stack_bytes >= 1024 for k in usage.kernels if k.function == "_Z5spillPfi")
    assert all(0 < k.registers <= 255 for k in usage.kernels)


def device_code(candidate: Path) -> str:
    """The candidate's KERNEL_SOURCE with its template instantiated for float."""
    for node in ast.parse(candidate.read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "KERNEL_SOURCE":
            return (node.value.value + "template __global__ void swish_kernel<float>("
                    "const float*, float*, int64_t);\n")
    raise AssertionError(f"{candidate.name} has no KERNEL_SOURCE")


@pytest.mark.parametrize("candidate,flags,flushes", [
    (FAST_MATH_SWISH, ["--use_fast_math"], True),
    (IEEE_SWISH, [], False),
], ids=["redteam-fast-math", "control-ieee"])
def test_swish_product_flushes_only_under_fast_math(tmp_path: Path, candidate: Path,
                                                    flags: list[str], flushes: bool):
    """The red team's claim, without a GPU: --use_fast_math (-ftz=true) turns the product
    x * sigmoid(x) into mul.ftz.f32 (SASS FMUL.FTZ), which flushes subnormal operands and
    results; the control's build keeps the IEEE multiply."""
    from torch.utils.cpp_extension import include_paths
    source = tmp_path / "swish.cu"
    source.write_text(device_code(candidate))
    includes = [f"-I{p}" for p in include_paths()]
    ptx, cubin = tmp_path / "swish.ptx", tmp_path / "swish.cubin"
    for kind, out in (("-ptx", ptx), ("-cubin", cubin)):
        subprocess.run([nvcc(), kind, "-arch=sm_90", "-std=c++17", *flags, *includes, "-o",
                        str(out), str(source)], check=True, capture_output=True)
    register_product = re.compile(r"mul(\.ftz)?\.f32\s+%f\d+, %f\d+, %f\d+;")
    products = register_product.findall(ptx.read_text())
    assert products == ([".ftz"] if flushes else [""]), products
    sass = subprocess.run([find_cuobjdump(), "-sass", str(cubin)], check=True,
                          capture_output=True, text=True).stdout
    assert ("FMUL.FTZ" in sass) is flushes


@pytest.mark.gpu
def test_load_inline_extension_reports_real_resources(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch):
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    from torch.utils.cpp_extension import load_inline
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    cuda = SOURCE + r"""
#include <torch/extension.h>
void run_shared(torch::Tensor y) { shared_kernel<<<1, 256>>>(y.data_ptr<float>()); }
"""
    ext = load_inline("kdiff_resources_probe", cpp_sources="void run_shared(torch::Tensor y);",
                      cuda_sources=cuda, functions=["run_shared"])
    y = torch.zeros(256, device="cuda")
    ext.run_shared(y)
    torch.cuda.synchronize()
    assert y[1].item() == 7.0  # the kernel ran: buf[7] = 7
    cuobjdump = find_cuobjdump()
    assert cuobjdump is not None, "a machine that builds CUDA extensions has cuobjdump"
    [library] = extension_objects(tmp_path)
    usage = read_resource_usage(library, cuobjdump)
    major, minor = torch.cuda.get_device_capability()
    arch = f"sm_{major}{minor}"
    kernels = {k.function: k for k in usage.kernels if k.arch and base_arch(k.arch) == arch}
    # 16 KiB, and on sm_90 and later the driver's 1 KiB reserve where the toolkit counts it
    # in the function's window (ptxas 12.9 and 13.0 do; older ones were not looked at).
    reserves = (0, 1024) if major >= 9 else (0,)
    assert kernels["_Z13shared_kernelPf"].shared_bytes in [16384 + r for r in reserves], kernels
    assert kernels["_Z5spillPfi"].stack_bytes >= 1024, kernels
    assert all(0 < k.registers <= 255 for k in kernels.values())
