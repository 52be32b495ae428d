"""The environment a process that runs candidate code starts with: an allow-list, not the
judge's environment minus a few names. The judge's tokens, credentials and kdiff's own
settings (KDIFF_*) stay out: a candidate must neither read secrets nor tell that kdiff runs it.
"""
from __future__ import annotations

import getpass
from pathlib import Path
from typing import Mapping

# What the interpreter, the compilers (Triton's, a load_inline build's) and the CUDA driver
# read, by exact name.
INHERITED = frozenset({
    "PATH", "LANG", "LANGUAGE", "TERM", "TZ", "PYTHONPATH", "PYTHONHASHSEED",
    "LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH",
    "CC", "CXX", "CUDAHOSTCXX", "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS",
    "TORCH_CUDA_ARCH_LIST", "MAX_JOBS",
})
# ... and by prefix: locale categories, Triton's and the GPU stacks' own settings.
INHERITED_PREFIXES = ("LC_", "TRITON_", "CUDA_", "NVIDIA_", "ROCM_", "HIP_", "HSA_")

# Triton's fp-fusion default, pinned for every process that compiles a candidate's kernels (a
# worker, the judge's compiler child), so that RES-02 measures the kernels the worker runs
# compiled the same way: Triton 3.9 warns that its default (fusion on) turns off in 3.10.
TRITON_PINNED = {"TRITON_DEFAULT_FP_FUSION": "1"}


# What a process of candidate code reads once, as it starts or loads a library, so that a
# process forked from another (kdiff.sandbox.zygote's base) has it from its ancestor's start:
# no bytecode written, no user site (own_folders says why); one thread for every math
# library the process loads, as for torch (seeding.one_thread): numpy's OpenBLAS does the
# interpreter's tl.dot and reads this when it loads; with its default pool, control 20/0
# takes 17 s in `kdiff run` instead of 8 s.
LOADED_AT_START = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1",
                   "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def allowed_environment(source: Mapping[str, str]) -> dict[str, str]:
    """The variables of `source` a candidate's process may inherit."""
    return {k: v for k, v in source.items()
            if k in INHERITED or k.startswith(INHERITED_PREFIXES)}


def judges_user() -> dict[str, str]:
    """USER and LOGNAME, the judge's user's: a candidate's process runs as a uid with no
    passwd entry, and getpass.getuser() (torch.compile's inductor and Triton ask it, also
    when the judge's compiler child imports inductor's generated code) answers from these."""
    user = getpass.getuser()
    return {"USER": user, "LOGNAME": user}


# The home and caches of a candidate's process (a worker, or the judge's compiler child that
# imports the candidate's or inductor's code): their defaults (~, /tmp/torchinductor_<user>,
# ~/.triton) lie outside the one folder it may write.
OWN_FOLDERS = (("HOME", "home"), ("TMPDIR", "tmp"), ("TRITON_CACHE_DIR", "triton"),
               ("TORCH_EXTENSIONS_DIR", "torch_extensions"),
               ("TORCHINDUCTOR_CACHE_DIR", "inductor"), ("XDG_CACHE_HOME", "cache"))


def own_folders(folder: Path) -> dict[str, str]:
    """OWN_FOLDERS made inside `folder`, as the variables that name them, and no user
    site-packages: a home the process writes is no place to import from. Python runs the
    `.pth` files of `~/.local/lib/pythonX.Y/site-packages` at its start, and a worker started
    again cold (its folder outlives a restart) starts as the judge's user, root, before it
    confines itself: a candidate's `.pth` there ran as root, unconfined
    (tests/hostile/plants_a_user_site.py)."""
    env = {"PYTHONNOUSERSITE": "1"}
    for var, sub in OWN_FOLDERS:
        (folder / sub).mkdir(exist_ok=True)
        env[var] = str(folder / sub)
    return env


def for_device(env: Mapping[str, str], device: str) -> dict[str, str]:
    """`env` set for a worker on `device`: on the CPU, Triton through its interpreter and no
    GPU visible; elsewhere compiled Triton, whatever the judge's own shell says (a kernel
    interpreted on a GPU machine would be judged without its device code)."""
    out = {k: v for k, v in env.items() if k != "TRITON_INTERPRET"}
    if device == "cpu":
        out["TRITON_INTERPRET"] = "1"
        out["CUDA_VISIBLE_DEVICES"] = ""
    return out


def confined_environment(source: Mapping[str, str], device: str, folder: Path
                         ) -> dict[str, str]:
    """The whole environment of a confined process that runs untrusted code in `folder` on
    `device` (a candidate's worker, a benchmark's script): `source`'s allowed variables, the
    device's Triton mode, one thread for every math library, the judge's user name (the
    process may run as a uid with no passwd entry) and folders of its own."""
    env = {**TRITON_PINNED, **for_device(allowed_environment(source), device)}
    return {**env, **LOADED_AT_START, **judges_user(), **own_folders(folder)}
