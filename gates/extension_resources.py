"""CUDA kernels inside compiled extensions: the registers, static shared memory and local
memory of every kernel in a shared object a candidate built (`torch.utils.cpp_extension`'s
`load_inline` or `load`), read from the binary with `cuobjdump --dump-resource-usage`.

Where the objects are: the sandbox points TORCH_EXTENSIONS_DIR (load_inline's default build
folder), TMPDIR and the working directory of the worker into the worker's own folder, so every
extension the candidate builds with the defaults lands there, and the judge lists it there
itself rather than asking the candidate's process what it loaded. Shared objects without
device code (Triton's host launchers, a C++-only extension) are left out.

What cuobjdump prints, per ELF image in the fatbin (one per architecture it holds SASS for;
CUDA Binary Utilities, "cuobjdump", option --dump-resource-usage; the layout below is the one
cuobjdump 13.1 prints for nvcc 12.x and 13.0 objects):

    Fatbin elf code:
    ================
    arch = sm_90
    ...
    Resource usage:
     Common:
      GLOBAL:0
     Function _Z12scale_kernelPKfS0_Pfii:
      REG:12 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:560 TEXTURE:0 SURFACE:0 SAMPLER:0

REG is registers per thread, SHARED the static shared memory of the function in bytes, STACK
its stack frame (where ptxas puts spills) and LOCAL its other local memory. A `Fatbin ptx code`
image carries no resource usage: the driver compiles that PTX when the module loads, so what
the kernel needs there is not in the file. A plain cubin prints the `Resource usage:` block
with no header (its architecture is then unknown).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

# cuobjdump reads a whole fatbin; the largest extension objects are tens of MB.
CUOBJDUMP_TIMEOUT_S = 120.0
# Objects read per candidate: an extension is one or two, and Triton's host launchers (no
# device code, two per kernel) lie in the same folder; a folder of thousands must not turn the
# gate into thousands of cuobjdump runs.
MAX_OBJECTS = 64
NO_DEVICE_CODE = "does not contain device code"  # cuobjdump's message, exit status 255

_IMAGE = re.compile(r"^Fatbin (elf|ptx) code:")
_ARCH = re.compile(r"^arch = (\S+)")
_FUNCTION = re.compile(r"^\s*Function (\S+):")
_FIELD = re.compile(r"([A-Z]+(?:\[\d+\])?):(\d+)")


@dataclass(frozen=True)
class ExtensionKernel:
    """One kernel of one architecture's image in a compiled extension."""

    file: str
    arch: str | None  # "sm_90"; None for a bare cubin, whose header names none
    function: str  # the ELF symbol (mangled, as ptxas reports it)
    registers: int  # per thread
    shared_bytes: int  # static shared memory (dynamic shared memory is a launch argument)
    stack_bytes: int  # stack frame: spills and local arrays
    local_bytes: int


@dataclass
class ResourceUsage:
    """What cuobjdump read from one shared object."""

    kernels: list[ExtensionKernel] = field(default_factory=list)
    ptx_only: list[str] = field(default_factory=list)  # archs with PTX and no SASS


def base_arch(arch: str) -> str:
    """sm_90a -> sm_90: the arch-specific ('a') and family ('f') variants nvcc builds for
    (torch's extensions target sm_90a on Hopper) have their base architecture's limits."""
    return re.sub(r"^(sm_\d+)[af]$", r"\1", arch)


def parse_resource_usage(text: str, file: str) -> ResourceUsage:
    """The per-function resources in `cuobjdump --dump-resource-usage` output."""
    usage = ResourceUsage()
    kind, arch, function = "elf", None, None
    sass_archs: set[str] = set()
    ptx_archs: set[str] = set()
    for line in text.splitlines():
        if match := _IMAGE.match(line):
            kind, arch, function = match.group(1), None, None
        elif match := _ARCH.match(line):
            arch = match.group(1)
            if kind == "elf":
                sass_archs.add(arch)
            else:
                ptx_archs.add(arch)
        elif match := _FUNCTION.match(line):
            function = match.group(1)
        elif function is not None and "REG:" in line:
            fields = {k: int(v) for k, v in _FIELD.findall(line)}
            usage.kernels.append(ExtensionKernel(
                file=file, arch=arch, function=function, registers=fields["REG"],
                shared_bytes=fields.get("SHARED", 0), stack_bytes=fields.get("STACK", 0),
                local_bytes=fields.get("LOCAL", 0)))
            function = None
    usage.ptx_only = sorted(ptx_archs - sass_archs)
    return usage


def find_cuobjdump() -> str | None:
    """cuobjdump on PATH; else the one of the toolkit torch builds extensions with (CUDA_HOME);
    else the copy Triton ships for its own kernels (TRITON_CUOBJDUMP_PATH overrides it)."""
    found = shutil.which("cuobjdump")
    if found:
        return found
    from torch.utils.cpp_extension import CUDA_HOME
    candidates = [Path(CUDA_HOME) / "bin" / "cuobjdump"] if CUDA_HOME else []
    try:
        from triton import knobs
        candidates.append(Path(knobs.nvidia.cuobjdump.path))
    except (ImportError, AttributeError, RuntimeError, OSError):
        pass  # no Triton, or one that does not say where its tools are
    return next((str(p) for p in candidates if p.is_file() and os.access(p, os.X_OK)), None)


def extension_objects(folder: Path) -> list[Path]:
    """Every shared object built under `folder` (the worker's own folder), in a stable order.
    Links are left out: one may point at any library on the machine (libtorch_cuda's
    thousands of kernels), which is not the candidate's build."""
    return sorted(p for p in Path(folder).rglob("*.so") if p.is_file() and not p.is_symlink())


class ReadError(RuntimeError):
    """cuobjdump could not read an object that is not simply free of device code."""


def read_resource_usage(path: Path, cuobjdump: str) -> ResourceUsage | None:
    """The kernels of one shared object; None when it holds no device code."""
    try:
        proc = subprocess.run([cuobjdump, "--dump-resource-usage", str(path)],
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              errors="replace", timeout=CUOBJDUMP_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise ReadError(f"cuobjdump did not finish within {CUOBJDUMP_TIMEOUT_S:.0f} s on "
                        f"{path.name}") from exc
    if NO_DEVICE_CODE in proc.stderr + proc.stdout:
        return None
    if proc.returncode != 0:
        raise ReadError(f"cuobjdump exited with status {proc.returncode} on {path.name}: "
                        f"{proc.stderr.strip()[:300]}")
    return parse_resource_usage(proc.stdout, str(path))
