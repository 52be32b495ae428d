"""Triton launches: recorded in the worker, compiled for other targets in a child process.

The worker runs a candidate's Triton kernels through the interpreter (CPU) or compiled for the
device at hand (CUDA); neither says whether a kernel fits an H100 or a B200. The recorder
notes every distinct launch (the kernel's file and qualified name, the signature Triton's JIT
would specialise on, the constexpr values and the launch options) by wrapping the launch path:
`InterpretedFunction.run`, `JITFunction.run`, and `Autotuner.run` (whose configs are
alternatives: on hardware the autotuner drops a config that does not fit). torch.compile's
Triton kernels (inductor, on CUDA) launch through inductor's `CachingAutotuner` and its compiled
launchers instead: those are read, not wrapped (wrapping inductor's `run` broke its recompiles),
when the judge asks for the launches: every autotuner of the worker that has settled on one
config is a launch of that config, as inductor compiled it.

`compile_launches` compiles launches for targets in short-lived child processes started
without TRITON_INTERPRET, so that `triton.jit` gives real JITFunctions: a child loads a module,
looks the kernel up by name and runs `triton.compile` with a `GPUTarget`, which needs no GPU.
It reports shared memory and tensor-memory columns, which Triton's allocation passes fix
before it lowers the kernel to LLVM (plus any `tcgen05.alloc` of inline assembly), so the
compile stops there: the lowering, LLVM's optimiser and ptxas are 85-90% of a compile (2.6 s
against 0.17 s for a 128 x 128 fp32 tile). Registers need ptxas, and are read (with spills)
only for a launch that sets `maxnreg`: without it the PTX requires the block size
(`.reqntid`) and ptxas fits the registers to it, spilling the rest, so a block's registers
cannot exceed the target's (tests/test_gate_res02.py checks both with Triton's ptxas).
- The module is the judge's where it can be: kdiff.sandbox.kernel_source reads the kernel's file and
  writes a module of its imports of Triton, constants and jit functions, and nothing that
  runs. The results are then the judge's own ("checked").
- Where a kernel needs more (a helper from another module, a constant computed at import),
  the child imports the kernel's file, and runs its code: its results are that code's word
  ("unchecked", and why); RES-02 believes a violation from it, never a fit.
- One child per kernel file: it is sent that file's jobs only and read for them only, so a
  module can misreport its own kernels and no other file's.
- Each child is confined as a worker (kdiff.sandbox.process.CandidateProcess.compile_launches), in a
  folder of the judge's that the candidate's worker cannot write, forked from a zygote that
  holds torch and Triton already; it has a deadline, and its whole process group is killed
  when it misses it. The judge checks the form of each result (the fields of
  KernelResources, the job's target).

The disk cache is the judge's: `ResourceCache` keeps results per (what was compiled, kernel
name, signature, constexprs, options, target, Triton version) in kdiff's cache folder
(kdiff.data.cache: $KDIFF_CACHE, else ~/.cache/kdiff), and the judge compiles only what it does not
hold. A checked result is keyed by the judge's module itself, read once and compiled as read
(`JudgesModules`), and kept for every candidate; an unchecked one by the kernel file's digest
(with the helpers it names or imports from kdiff), only for the candidate whose judging
computed it (its file's hash is in the key).
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import gc
import hashlib
import importlib
import inspect
import io
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import types
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterator

from kdiff.data.cache import cache_root
from kdiff.data.code import code_digest, source_digest
from kdiff.data.files import UnreadableFile, read_regular_file
from kdiff.sandbox.kernel_source import (
    ExtractedModule,
    NotExtractable,
    extract,
    followed_files,
)
from kdiff.sandbox.workerenv import TRITON_PINNED, allowed_environment, judges_user, own_folders

# Per kernel and target. A full compile of the red team's 128x1024 fp32 tile (the slowest in
# the corpus: its ptxas spills 18 KB) took 71 s for sm_90 on 2 cores under a load of 11.
COMPILE_TIMEOUT_S = 300.0
MAX_RECORDED = 32  # distinct launches kept per worker; a data-dependent constexpr must not
#                    turn the compile step into hundreds of compiles
# Configs of untimed autotuners kept per worker (LaunchRecorder.other_configs): each launch
# kept may bring its autotuner's configs, up to as many as the launches kept (mamba_ssm's
# combined chunked scan launches five autotuned kernels of 9 to 11 configs each, 52 in all)
MAX_OTHER_CONFIGS = MAX_RECORDED * MAX_RECORDED
CACHE_FORMAT = 6  # bump when what a cache entry holds changes
LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion",
                  "launch_pdl", "launch_cooperative_grid")

# Names an autotuner sets on the launch in progress (empty outside an autotuned launch).
_tuned_names: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar(
    "kdiff_tuned_names", default=())
# Set while the recorder takes the configs an untimed autotuner did not run (their warmups).
_other_configs: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "kdiff_other_configs", default=False)


@dataclass
class Launch:
    """One distinct launch, in primitives only (it travels to the judge)."""

    module: str
    file: str
    qualname: str
    signature: dict[str, str] = field(default_factory=dict)
    constexprs: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    tuned: list[str] = field(default_factory=list)  # names the autotuner chose, [] if none
    unavailable: str | None = None  # why this launch cannot be compiled elsewhere

    def key(self) -> str:
        return json.dumps([self.file, self.qualname, self.signature, self.constexprs,
                           self.options], sort_keys=True, default=str)

    def label(self) -> str:
        consts = ", ".join(f"{k}={_show(v)}" for k, v in self.constexprs.items())
        opts = ", ".join(f"{k}={v}" for k, v in self.options.items())
        return f"{self.qualname}[{', '.join(x for x in (consts, opts) if x)}]"

    def alternatives_key(self) -> str | None:
        """Launches of one autotuned kernel that differ only in what the autotuner chose are
        alternatives of one another; None for a launch no autotuner chose."""
        if not self.tuned:
            return None
        fixed = {k: v for k, v in self.constexprs.items() if k not in self.tuned}
        return json.dumps([self.file, self.qualname, self.signature, fixed], sort_keys=True,
                          default=str)


@dataclass
class KernelResources:
    """What one compiled kernel needs from one target."""

    target: str
    shared_bytes: int
    tmem_columns: int
    num_warps: int
    registers: int | None  # per thread, from ptxas; None where it did not run (no maxnreg)
    spill_store_bytes: int | None
    stack_bytes: int | None


def _show(value: Any) -> str:
    if isinstance(value, dict) and "tl.dtype" in value:
        return f"tl.{value['tl.dtype']}"
    return repr(value)


# -- recording (in the worker) --------------------------------------------------------------
def _encode_constexpr(value: Any) -> Any:
    import triton.language as tl
    if isinstance(value, tl.constexpr):
        value = value.value
    if value is None:
        return value
    # a member of an enum of ints, floats or strings (lmdeploy's QuantPolicy, an IntEnum, as a
    # constexpr): the compiler reads its value, and a reply carries no library's classes
    for plain in (bool, int, float, str):
        if isinstance(value, plain):
            return plain.__str__(value) if plain is str else plain(value)
    if isinstance(value, tl.dtype):
        return {"tl.dtype": str(value)}
    if isinstance(value, tuple):
        return [_encode_constexpr(v) for v in value]
    raise TypeError(f"constexpr of type {type(value).__name__} cannot be sent to a compiler "
                    "process")


def _decode_constexpr(value: Any) -> Any:
    import triton.language as tl
    if isinstance(value, dict) and "tl.dtype" in value:
        return tl.dtype(value["tl.dtype"])
    if isinstance(value, list):
        return tuple(_decode_constexpr(v) for v in value)
    return value


@dataclass
class _KernelParams:
    fn: Callable[..., Any]
    constexpr: dict[str, bool]  # parameter name -> is constexpr
    no_specialize: set[str]


def _interpreted_params(kernel: Any) -> _KernelParams:
    from triton.runtime.jit import _normalize_ty
    fn = kernel.fn
    annotations = {n: _normalize_ty(t) for n, t in inspect.get_annotations(fn).items()}
    names = list(inspect.signature(fn).parameters)
    dns = kernel.kwargs.get("do_not_specialize") or []
    return _KernelParams(fn, {n: annotations.get(n) == "constexpr" for n in names},
                         {names[d] if isinstance(d, int) else d for d in dns})


def _jit_params(kernel: Any) -> _KernelParams:
    return _KernelParams(kernel.fn, {p.name: p.is_constexpr for p in kernel.params},
                         {p.name for p in kernel.params if p.do_not_specialize})


def describe_launch(params: _KernelParams, args: tuple, kwargs: dict[str, Any]) -> Launch:
    """The launch as Triton's JIT would specialise it: tensor arguments become pointer
    types, an integer equal to 1 (and None) a constexpr, unless do_not_specialize says
    otherwise. Divisibility attributes are not recorded (the compile assumes none: the
    conservative choice for vector widths)."""
    from triton.runtime.jit import mangle_type
    fn = params.fn
    launch = Launch(module=fn.__module__, file=fn.__code__.co_filename, qualname=fn.__qualname__,
                    tuned=list(_tuned_names.get()))
    if "<locals>" in fn.__qualname__:
        launch.unavailable = "defined inside a function: it cannot be imported by name"
    elif not Path(fn.__code__.co_filename).is_file():
        launch.unavailable = f"defined in {fn.__code__.co_filename}, not in a file"
    names = list(params.constexpr)
    bound = inspect.signature(fn).bind_partial(*args, **{k: v for k, v in kwargs.items()
                                                        if k in params.constexpr})
    bound.apply_defaults()
    launch.options = {k: v for k, v in kwargs.items()
                      if k in LAUNCH_OPTIONS and isinstance(v, (bool, int, float, str))}
    for name in names:
        if name not in bound.arguments:
            raise TypeError(f"{fn.__qualname__}: argument {name} missing at launch")
        value = bound.arguments[name]
        if params.constexpr[name]:
            launch.signature[name] = "constexpr"
            launch.constexprs[name] = _encode_constexpr(value)
            continue
        ty = mangle_type(value, specialize=name not in params.no_specialize)
        launch.signature[name] = ty
        if ty == "constexpr":
            launch.constexprs[name] = _encode_constexpr(value)
    return launch


class LaunchRecorder:
    """Records each distinct Triton kernel launch (function, argument types, constexprs,
    launch options) so that the resource gate can compile it for other targets."""

    def __init__(self) -> None:
        self.launches: dict[str, Launch] = {}
        # an untimed autotuner's configs that did not run (`_with_other_configs`), kept apart
        # (MAX_OTHER_CONFIGS) so that they never crowd a launch that ran out of MAX_RECORDED
        self.other_configs: dict[str, Launch] = {}
        self.dropped = 0  # distinct launches beyond MAX_RECORDED

    def install(self) -> None:
        try:
            from triton.runtime import autotuner, interpreter, jit
        except ImportError:  # no Triton: nothing can launch a Triton kernel
            return
        interpreter.InterpretedFunction.run = self._recording(
            interpreter.InterpretedFunction.run, _interpreted_params)
        jit.JITFunction.run = self._recording(jit.JITFunction.run, _jit_params)
        autotuner.Autotuner.run = self._with_other_configs(_naming_tuned(autotuner.Autotuner.run))

    def recorded(self) -> list[Launch]:
        """The launches that ran, then the other configs of their untimed autotuners."""
        return [*self.launches.values(),
                *(launch for key, launch in self.other_configs.items()
                  if key not in self.launches)]

    def _with_other_configs(self, run: Callable[..., Any]) -> Callable[..., Any]:
        """Where the autotuner is untimed (kdiff.sandbox.interpreter_device: on the CPU the
        first config runs, every time), a GPU's autotuner would have timed every config its
        pruning keeps and dropped those out of resources; RES-02 judges an autotuner's configs
        as alternatives, so each of those configs is recorded too, by a warmup (which launches
        nothing in the interpreter), under the launch's tuned names."""
        @functools.wraps(run)
        def run_recording_other_configs(tuner: Any, *args: Any, **kwargs: Any) -> Any:
            result = run(tuner, *args, **kwargs)
            if len(tuner.configs) > 1 and getattr(type(tuner)._bench, "in_order", False):
                names = set().union(*(config.all_kwargs() for config in tuner.configs))
                tuner.nargs = dict(zip(tuner.arg_names, args))  # what pruning reads, as run sets
                try:
                    configs = tuner.prune_configs(kwargs)
                finally:
                    tuner.nargs = None
                tokens = (_other_configs.set(True), _tuned_names.set(tuple(sorted(names))))
                try:
                    for config in configs[:MAX_RECORDED]:
                        tuner.fn.run(*args, **{**kwargs, **config.all_kwargs(), "warmup": True})
                finally:
                    _tuned_names.reset(tokens[1])
                    _other_configs.reset(tokens[0])
            return result
        return run_recording_other_configs

    def _recording(self, run: Callable[..., Any],
                   params_of: Callable[[Any], _KernelParams]) -> Callable[..., Any]:
        @functools.wraps(run)
        def recording_run(kernel: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
            if not warmup or _other_configs.get():
                self.record(kernel, params_of, args, kwargs)
            return run(kernel, *args, grid=grid, warmup=warmup, **kwargs)
        return recording_run

    def record(self, kernel: Any, params_of: Callable[[Any], _KernelParams], args: tuple,
               kwargs: dict[str, Any]) -> None:
        try:
            launch = describe_launch(params_of(kernel), args, kwargs)
        except Exception as exc:  # noqa: BLE001 - kept as a launch that cannot be compiled
            fn = getattr(kernel, "fn", kernel)
            launch = Launch(getattr(fn, "__module__", "?"), "?",
                            getattr(fn, "__qualname__", repr(fn)),
                            unavailable=f"launch not understood: {type(exc).__name__}: {exc}")
        self._add(launch)

    def _add(self, launch: Launch) -> None:
        key = launch.key()
        other = _other_configs.get()
        kept = self.other_configs if other else self.launches
        if key in kept:
            return
        if len(kept) >= (MAX_OTHER_CONFIGS if other else MAX_RECORDED):
            self.dropped += 1
            return
        kept[key] = launch

    def clear(self) -> None:
        self.launches.clear()
        self.other_configs.clear()
        self.dropped = 0

    def add_inductor_launches(self) -> None:
        """The launches of inductor's kernels in this process: each autotuner that has settled
        on one config (after its first launch). Nothing to do before inductor's runtime is
        imported; importing it here would cost seconds."""
        heuristics = sys.modules.get(INDUCTOR_HEURISTICS)
        if heuristics is None:
            return
        tuners = [obj for obj in gc.get_objects()
                  if issubclass(type(obj), heuristics.CachingAutotuner)]
        for tuner in tuners:
            launchers = getattr(tuner, "launchers", None) or []
            config = getattr(launchers[0], "config", None) if len(launchers) == 1 else None
            if config is None:
                continue
            try:
                launch = describe_inductor_launch(tuner, config)
            except Exception as exc:  # noqa: BLE001 - kept as a launch that cannot be compiled
                launch = Launch("?", "?", str(getattr(tuner.fn, "__qualname__", "inductor")),
                                unavailable=f"launch not understood: {type(exc).__name__}: {exc}")
            self._add(launch)


INDUCTOR_HEURISTICS = "torch._inductor.runtime.triton_heuristics"


def describe_inductor_launch(tuner: Any, config: Any) -> Launch:
    """The launch of inductor's kernel with its autotuning `config`, as inductor compiles it
    (`CachingAutotuner._create_compile_meta` and `_create_compile_options`: the signature with
    the config's names as constexprs, the constants, num_warps and num_stages). The kernel's
    file is the autotuner's `filename` (inductor's kernel module has no importable name), its
    name the JITFunction's (which keeps it after inductor drops the Python function it
    compiled in a pool process); the other configs, where inductor still holds them, are
    alternatives of this one."""
    from kdiff.data.problem import LOADED_PREFIX
    meta = tuner._create_compile_meta(config)
    options = tuner._create_compile_options(config, meta)
    # Inductor drops its configs once it has made its launchers: the alternatives are then
    # unknown, and the chosen config is judged alone (stricter, never looser).
    configs = tuner.configs or []
    names = sorted({n for c in configs for n in c.kwargs}) if len(configs) > 1 else []
    launch = Launch(module=f"{LOADED_PREFIX}inductor", file=str(tuner.filename),
                    qualname=tuner.fn.__qualname__, signature=dict(meta["signature"]),
                    constexprs={k: _encode_constexpr(v) for k, v in meta["constants"].items()},
                    options={k: v for k, v in options.items() if k in LAUNCH_OPTIONS
                             and isinstance(v, (bool, int, float, str))},
                    tuned=names)
    if not Path(launch.file).is_file():
        launch.unavailable = f"defined in {launch.file}, not in a file"
    return launch


def _naming_tuned(run: Callable[..., Any]) -> Callable[..., Any]:
    """While an autotuner with several configs launches, the names its configs set are the
    launch's alternatives (the autotuner drops a config that is out of resources)."""
    @functools.wraps(run)
    def tuned_run(tuner: Any, *args: Any, **kwargs: Any) -> Any:
        names: set[str] = set()
        if len(tuner.configs) > 1:
            for config in tuner.configs:
                names.update(config.all_kwargs())
        token = _tuned_names.set(tuple(sorted(names)))
        try:
            return run(tuner, *args, **kwargs)
        finally:
            _tuned_names.reset(token)
    return tuned_run


# -- compiling (the worker asks, a child process compiles, the judge caches) ----------------
def file_digest(path: str) -> str | None:
    """What names a kernel's (or a candidate's) file in the cache: the file as the judge reads
    it (a regular file of bounded size), the files beside it that it names and the kdiff
    modules they import (kdiff.data.code.source_digest: a kernel calling a helper's jit
    function compiles differently once the helper changes), and the files of its package the
    judge's module takes jit functions from (kdiff.sandbox.kernel_source.followed_files);
    None where it cannot be read."""
    try:
        digest = source_digest(Path(path))
        followed = followed_files(path)  # jit functions taken from other files of its package
        if followed:
            h = hashlib.sha256(digest.encode())
            for other in followed:
                h.update(f"\0{other}\0".encode() + read_regular_file(other))
            digest = h.hexdigest()
        return digest
    except (OSError, UnreadableFile):
        return None


class JudgesModules:
    """The judge's own module of each launch file (kdiff.sandbox.kernel_source), read once:
    the module a checked result is keyed by is the one compiled. A worker names the files of
    its launches, and one in a folder it writes can change between two readings of the judge
    (tests/fixtures/cross_candidate/runs/poisons_the_resource_cache)."""

    def __init__(self) -> None:
        self._modules: dict[str, ExtractedModule | str] = {}

    def __call__(self, file: str) -> ExtractedModule | str:
        """The module of `file`, or why the judge builds none."""
        if file not in self._modules:
            try:
                self._modules[file] = extract(read_regular_file(file), file)
            except (OSError, UnreadableFile, NotExtractable) as exc:
                self._modules[file] = str(exc)
        return self._modules[file]


def module_digest(module: ExtractedModule) -> str:
    """What names the judge's module of a file in the cache: every way of it it compiles."""
    return hashlib.sha256("\0".join(text for text, _ in module.variants()).encode()).hexdigest()


class ResourceCache:
    """The judge's disk cache of compile results. A result the judge computed from its own
    module of a kernel's file ("checked": kdiff.sandbox.kernel_source) is kept for every candidate
    that launches a file with that module, keyed by the module (`modules`: the one compiled);
    one a compiler child computed by importing the file is that module's word, kept for the
    candidate being judged (`owner`, the hash of its file) alone. Timeouts and crashes are not
    kept: they depend on the machine's load, not on the kernel; a compile error is kept (as
    deterministic as a result)."""

    JUDGE = "judge"  # the owner of checked results

    def __init__(self, owner: str, root: Path | None = None) -> None:
        self.owner = owner
        self.dir = Path(root or cache_root()) / "triton-resources"
        self._digests: dict[str, str | None] = {}  # launch file -> file_digest, for one candidate
        self.modules = JudgesModules()

    @staticmethod
    def judging_code() -> str:
        """The code that makes an entry (this module, the extractor and what they import): a
        change to it re-makes every entry, as a fixed extraction must."""
        return code_digest(__name__)

    def key(self, launch: Launch, target: str, checked: bool = False) -> str | None:
        import torch
        import triton
        if checked:
            module = self.modules(launch.file)
            kernel_hash = module_digest(module) if isinstance(module, ExtractedModule) else None
        else:
            if launch.file not in self._digests:
                self._digests[launch.file] = file_digest(launch.file)
            kernel_hash = self._digests[launch.file]
        if kernel_hash is None:
            return None
        # Unchecked, the module name says what the child imported (a name, or the file).
        # torch's version: inductor's kernels compile with torch's triton_helpers.
        blob = json.dumps([CACHE_FORMAT, self.judging_code(), triton.__version__,
                           torch.__version__,
                           self.JUDGE if checked else [self.owner, launch.module], kernel_hash,
                           launch.qualname, launch.signature, launch.constexprs,
                           launch.options, target], sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()

    def get(self, launch: Launch, target: str) -> dict[str, Any] | None:
        for checked in (True, False):
            key = self.key(launch, target, checked)
            if key is None:
                continue
            try:
                outcome = json.loads(read_regular_file(self.dir / f"{key}.json"))
                return {**checked_outcome(outcome, target), "checked": checked}
            except (OSError, UnreadableFile, ValueError):
                continue
        return None

    def put(self, launch: Launch, target: str, result: dict[str, Any]) -> None:
        key = self.key(launch, target, bool(result.get("checked")))
        if key is None or result.get("timeout") or not result.get("cacheable"):
            return
        path = self.dir / f"{key}.json"
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(result))
            os.replace(tmp, path)
        except OSError:
            pass  # a cache that cannot be written only costs the next run a compile


_RESOURCE_TYPES = {"target": (str,), "shared_bytes": (int,), "tmem_columns": (int,),
                   "num_warps": (int,), "registers": (int, type(None)),
                   "spill_store_bytes": (int, type(None)), "stack_bytes": (int, type(None))}


def checked_outcome(outcome: Any, target: str) -> dict[str, Any]:
    """A compile outcome read from a child (or the cache) in the form the judge uses:
    {"resources": KernelResources fields, for `target`} or {"error": text}; ValueError for
    anything else."""
    if not isinstance(outcome, dict):
        raise ValueError(f"a {type(outcome).__name__}, not an outcome")
    if "resources" in outcome:
        res = outcome["resources"]
        if not (isinstance(res, dict) and set(res) == set(_RESOURCE_TYPES) and all(
                isinstance(res[k], kinds) and (bool in kinds or not isinstance(res[k], bool))
                for k, kinds in _RESOURCE_TYPES.items())):
            raise ValueError("resources not in KernelResources' form")
        if res["target"] != target:
            raise ValueError(f"resources for {res['target']!r}, not {target!r}")
        return outcome
    if not isinstance(outcome.get("error"), str):
        raise ValueError("neither resources nor an error")
    for flag in ("refused", "absent_from_triton"):
        if not isinstance(outcome.get(flag, False), bool):
            raise ValueError(f"`{flag}` is not a bool")
    return outcome


Starter = Callable[[list[str], dict[str, str], BinaryIO, Path], Any]


def compiler_environment() -> dict[str, str]:
    """The variables of this process a candidate's process may inherit (kdiff.sandbox.workerenv),
    without TRITON_INTERPRET: where `triton.jit` gives real JITFunctions, as the compiler
    child needs (and the zygote it is forked from). The child imports the candidate."""
    env = {k: v for k, v in allowed_environment(os.environ).items() if k != "TRITON_INTERPRET"}
    return {**TRITON_PINNED, **env, **judges_user()}


def start_fresh(argv: list[str], env: dict[str, str], log: BinaryIO, cwd: Path) -> Any:
    """The compiler child as a fresh interpreter (for callers outside a sandbox: tests)."""
    return subprocess.Popen([sys.executable, "-m", "kdiff.sandbox.launches", *argv],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                            env=env, start_new_session=True, cwd=str(cwd))


# How often the judge reads the compiler child's results while it runs (for `stop`).
POLL_S = 0.05

Outcomes = list["dict[str, Any] | None"]
# A job the case's wall budget left no time for: not measured, and not a fit either (RES-02
# fails it `case_timeout`, as a request past that budget is failed).
OVER_BUDGET = {"error": "not compiled: the case's wall budget is spent", "timeout": True,
               "over_budget": True, "cacheable": False}


# A result line is about 250 bytes (seven numbers, a target, the seconds) or an error cut to
# 400 characters: 4 KiB per job is room for either many times over, and no more is read.
RESULT_BYTES_PER_JOB = 4096


def _finished(result_path: Path, targets: list[str]) -> list[dict[str, Any]]:
    """The results the child has written so far for jobs of `targets` (one per job, in
    order): whole lines only (it may be mid-line), each checked for form (checked_outcome);
    one that is not in form is that job's error."""
    try:
        text = read_regular_file(result_path, RESULT_BYTES_PER_JOB * len(targets)).decode(
            "utf-8", "replace")
    except FileNotFoundError:
        return []
    except (OSError, UnreadableFile) as exc:
        return [{"error": f"the compiler child's results are unreadable: {exc}",
                 "timeout": False, "cacheable": False}] * len(targets)
    done = []
    for line, target in zip([ln for ln in text.splitlines(keepends=True)
                             if ln.endswith("\n")], targets):
        try:
            done.append({**checked_outcome(json.loads(line), target), "cacheable": True})
        except ValueError as exc:
            done.append({"error": f"the compiler child's result is not understood: {exc}",
                         "timeout": False, "cacheable": False})
    return done


def compile_launches(jobs: list[tuple[Launch, str]], timeout: float = COMPILE_TIMEOUT_S,
                     start: Starter = start_fresh, folder: Path | None = None,
                     stop: Callable[[Outcomes], str | None] | None = None,
                     modules: JudgesModules | None = None,
                     deadline: float | None = None) -> list[dict[str, Any]]:
    """Per (launch, target): {"resources": {...}} or {"error": "...", "timeout": bool}, plus
    "cacheable". One child process per kernel file (`start`ed with its arguments,
    environment, log and a working folder inside `folder`) compiles that file's jobs in
    order, importing the file once and reporting each as it finishes, with `timeout` seconds
    per compile. `stop`, given the outcomes so far (None where a job is not compiled yet), may
    return a reason to compile no further: the child is killed and the jobs left get that
    reason as their error. `modules`: the judge's modules of the files, as a cache keyed
    them (read now where none is given). `deadline` (time.monotonic()): the case's wall
    budget, past which nothing is compiled; the jobs left then are `over_budget`
    (tests/hostile/compiles_past_its_budget.py: the launches a worker reports are its word,
    as many as it likes)."""
    modules = modules or JudgesModules()
    results: Outcomes = [
        {"error": launch.unavailable, "timeout": False, "cacheable": False}
        if launch.unavailable else None for launch, _ in jobs]
    files: dict[str, list[int]] = {}
    for i, (launch, _) in enumerate(jobs):
        if results[i] is None:
            files.setdefault(launch.file, []).append(i)
    for file, group in files.items():
        if deadline is not None and time.monotonic() >= deadline:
            for i in group:
                results[i] = dict(OVER_BUDGET)
            continue
        reason = stop(results) if stop else None
        if reason:
            for i in group:
                results[i] = {"error": reason, "timeout": False, "cacheable": False,
                              "stopped": True}
            continue
        extracted = extracted_kernels(file, {jobs[i][0].qualname for i in group}, modules)
        _compile_file(jobs, group, results, timeout, start, folder, stop, extracted, deadline)
        refused = [i for i in group if (results[i] or {}).get("refused")
                   and (results[i] or {}).get("checked")]
        if refused:
            # The judge's module may lack what the file gives its kernels: a refusal counts
            # once the file's own module is refused too (its word, believed against itself).
            _compile_file(jobs, refused, results, timeout, start, folder, stop,
                          "compiled from its own module: the judge's was refused", deadline)
    return results  # type: ignore[return-value]


def extracted_kernels(file: str, qualnames: set[str], modules: JudgesModules | None = None
                      ) -> ExtractedModule | str:
    """The judge's own module of `file`'s kernels (kdiff.sandbox.kernel_source; `modules`' where
    given), when it holds every kernel named; else why not."""
    module = (modules or JudgesModules())(file)
    if not isinstance(module, ExtractedModule):
        return module
    missing = sorted(qualnames.difference(*(kernels for _, kernels in module.variants())))
    if not missing:
        return module
    return dict(module.refused).get(missing[0], f"{missing[0]}: not a top-level triton.jit kernel")


def _compile_file(jobs: list[tuple[Launch, str]], group: list[int], results: Outcomes,
                  timeout: float, start: Starter, folder: Path | None,
                  stop: Callable[[Outcomes], str | None] | None,
                  extracted: ExtractedModule | str, deadline: float | None) -> None:
    """The jobs `group` (of one kernel file) compiled by a child of their own, into
    `results`: from the judge's `extracted` module of the file, where there is one (the
    results are then the judge's, "checked"), else by importing the file (its own word,
    "unchecked" says why). A module with alternatives (branches of module-level switches)
    compiles each kernel in every one that builds it, and keeps the most it needs."""
    if isinstance(extracted, ExtractedModule) and extracted.alternatives:
        ways: list[Outcomes] = []
        for text, kernels in extracted.ways():
            way: Outcomes = list(results)
            built = [i for i in group if jobs[i][0].qualname in kernels]
            if built:
                _compile_file(jobs, built, way, timeout, start, folder, stop, replace(
                    extracted, text=text, kernels=kernels, alternatives=()), deadline)
            ways.append([way[i] if i in built else None for i in range(len(way))])
        for i in group:
            results[i] = most_needed([way[i] for way in ways if way[i] is not None])
        return
    targets = [jobs[i][1] for i in group]
    with tempfile.TemporaryDirectory(dir=folder) as tmp:  # a neutral name: the child's cwd
        request, result_path, log = (Path(tmp) / n for n in ("request.json", "results.jsonl",
                                                             "child.log"))
        launches = [jobs[i][0] for i in group]
        if isinstance(extracted, ExtractedModule):
            module = Path(tmp) / "kernels.py"
            module.write_text(extracted.text)
            from kdiff.data.problem import LOADED_PREFIX  # loaded by path in the child (_import)
            launches = [replace(launch, module=f"{LOADED_PREFIX}extracted", file=str(module))
                        for launch in launches]
        request.write_text(json.dumps([{"launch": asdict(launch), "target": target}
                                       for launch, target in zip(launches, targets)]))
        # Its own, empty caches: a Triton cache miss (ptxas, where it runs, logs), and a writable
        # home for inductor's generated code, which some kernel files import.
        env = {**compiler_environment(), **own_folders(Path(tmp))}
        env["TRITON_DUMP_PTXAS_LOG"] = "1"
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        with open(log, "wb") as out:
            proc = start([str(request), str(result_path)], env, out, Path(tmp))
            try:
                missing = _wait(proc, timeout, len(group), stop and (lambda: stop(
                    _merged(results, group, _finished(result_path, targets)))), deadline)
            finally:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)  # its children too
                proc.wait()
        done = _finished(result_path, targets)
        if len(done) < len(group) and not missing["timeout"] and not missing.get("stopped") \
                and not missing.get("over_budget"):
            tail = log.read_bytes()[-400:].decode("utf-8", "replace").strip()
            missing["error"] += ": " + tail.replace("\n", " | ")
    provenance = ({"checked": True} if isinstance(extracted, ExtractedModule)
                  else {"checked": False, "unchecked": extracted})
    for n, i in enumerate(group):
        results[i] = {**(done[n] if n < len(done) else missing), **provenance}


# Resources that grow with what a kernel needs; the most any way needs is what it may need.
_NEEDS = ("shared_bytes", "tmem_columns", "registers", "spill_store_bytes", "stack_bytes")


def most_needed(outcomes: list[dict[str, Any]]) -> dict[str, Any]:
    """One kernel's compile outcomes for one target, one per way it can be built: the first
    error, if any way failed (undecided as that way is); else the most of each resource any
    way needs (ptxas's None where one did not report). A way whose compile reached a name
    this Triton lacks (`absent_from_triton`: the other branch of a switch on Triton's version,
    mamba_ssm's `softplus` naming `tl.math.log1p`) is a way no process under this Triton ran:
    the interpreter holds the same modules, and the recorded launch's path through them would
    have raised there. It is left out where another way builds the kernel."""
    runnable = [o for o in outcomes if not o.get("absent_from_triton")]
    outcomes = runnable or outcomes
    failed = [o for o in outcomes if "resources" not in o]
    if failed:
        return failed[0]
    merged = dict(outcomes[0]["resources"])
    for outcome in outcomes[1:]:
        res = outcome["resources"]
        for key in _NEEDS:
            merged[key] = None if merged[key] is None or res[key] is None \
                else max(merged[key], res[key])
    return {**outcomes[0], "resources": merged,
            "cacheable": all(o.get("cacheable", False) for o in outcomes)}


def _merged(results: Outcomes, group: list[int], done: list[dict[str, Any]]) -> Outcomes:
    """`results` with a child's `done` for the jobs `group` it was sent, in job order."""
    merged = list(results)
    for i, outcome in zip(group, done):
        merged[i] = outcome
    return merged


def _wait(proc: Any, timeout: float, count: int, stop: Callable[[], str | None] | None,
          deadline: float | None = None) -> dict[str, Any]:
    """Wait for the child until it exits, `stop` gives a reason, `timeout` seconds per job
    pass, or the case's `deadline` comes; the error for the jobs it did not finish."""
    give_up = time.monotonic() + timeout * count
    if deadline is not None and deadline < give_up:
        give_up = deadline
        timed_out = dict(OVER_BUDGET)
    else:
        timed_out = {"error": f"compiling did not finish within {timeout:.0f} s per kernel",
                     "timeout": True, "cacheable": False}
    while True:
        left = give_up - time.monotonic()
        try:
            proc.wait(timeout=max(0.0, min(left, POLL_S if stop else left)))
            # Killed (its memory limit's out-of-memory killer, a crash): what it was compiling
            # may have done it, and a kernel can choose to (a huge unrolled body).
            return {"error": f"compiler process exited with status {proc.returncode}",
                    "timeout": False, "killed": proc.returncode < 0, "cacheable": False}
        except subprocess.TimeoutExpired:
            pass
        if left <= 0:
            return timed_out
        reason = stop() if stop else None
        if reason:
            return {"error": reason, "timeout": False, "cacheable": False, "stopped": True}


# -- the child process ----------------------------------------------------------------------
PTXAS_REGISTERS = re.compile(r"Used (\d+) registers")
PTXAS_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores")
TCGEN05_ALLOC = re.compile(r"tcgen05\.alloc\.[^;]*?,\s*(\d+)\s*;")


def parse_target(target: str) -> Any:
    from triton.backends.compiler import GPUTarget
    match = re.fullmatch(r"sm_(\d+)a?", target)
    if not match:
        raise ValueError(f"unknown target {target!r} (expected sm_NN)")
    return GPUTarget("cuda", int(match.group(1)), 32)


@functools.lru_cache(maxsize=None)
def _import(module: str, file: str) -> Any:
    from kdiff.data.problem import LOADED_PREFIX, load_module
    if module.startswith(LOADED_PREFIX):  # a file kdiff loaded by path (the candidate)
        return load_module(file, "candidate")
    return importlib.import_module(module)


def _find_kernel(launch: Launch) -> Any:
    from triton.runtime.jit import JITFunction
    obj: Any = _import(launch.module, launch.file)
    for part in launch.qualname.split("."):
        obj = getattr(obj, part)
    while not isinstance(obj, JITFunction) and hasattr(obj, "fn"):  # Autotuner, Heuristics
        obj = obj.fn
    if not isinstance(obj, JITFunction):
        raise TypeError(f"{launch.qualname} is a {type(obj).__name__}, not a Triton kernel")
    return obj


class _Allocated(Exception):
    """Raised where Triton's make_llir would add its lowering to LLVM: `pm` holds the passes
    it added before, its own allocation passes among them."""

    def __init__(self, pm: Any) -> None:
        super().__init__("stopped before the lowering to LLVM")
        self.pm = pm


class _AllocationRead(Exception):
    """Carries what the allocation passes fixed out of `triton.compile`, which stops there."""

    def __init__(self, metadata: dict[str, Any], ir_text: str) -> None:
        super().__init__("allocation read")
        self.metadata, self.ir_text = metadata, ir_text


@contextlib.contextmanager
def _stop_after_allocation() -> Iterator[None]:
    """Within: `triton.compile` for CUDA runs make_llir's passes up to its lowering, in the
    order and with the arguments of the Triton installed, reads the module's allocation
    attributes and raises _AllocationRead (no LLVM, PTX or ptxas)."""
    from triton.backends.nvidia import compiler
    lowering = compiler.nvidia.passes.ttgpuir  # the module make_llir takes add_to_llvmir from
    make_llir = compiler.CUDABackend.make_llir

    def stop(pm: Any, *args: Any) -> None:
        raise _Allocated(pm)

    def allocate_only(self: Any, src: Any, metadata: dict[str, Any], options: Any,
                      capability: int) -> Any:
        real = lowering.add_to_llvmir
        lowering.add_to_llvmir = stop
        try:
            make_llir(self, src, metadata, options, capability)
        except _Allocated as allocated:
            allocated.pm.run(src, "kdiff_allocation")
            warps = src.get_int_attr("ttg.total-num-warps")  # warp specialisation adds warps
            raise _AllocationRead({
                "shared": src.get_int_attr("ttg.shared") or 0,
                "tmem_size": src.get_int_attr("ttg.tensor_memory_size") or 0,
                "num_warps": warps if warps is not None else metadata["num_warps"],
            }, str(src)) from None
        finally:
            lowering.add_to_llvmir = real
        raise RuntimeError(f"Triton {compiler.__name__}.make_llir lowered the kernel without "
                           "calling add_to_llvmir: its allocation could not be read")

    compiler.CUDABackend.make_llir = allocate_only
    try:
        yield
    finally:
        compiler.CUDABackend.make_llir = make_llir


def compiled_metadata(compiled: Any) -> dict[str, Any]:
    """What `measure` reads of a whole compile's metadata (a CompiledKernel's)."""
    md = compiled.metadata
    return {"shared": md.shared, "tmem_size": getattr(md, "tmem_size", 0),
            "num_warps": md.num_warps}


def measure(metadata: dict[str, Any], ir_text: str, target: str, ptxas_log: str
            ) -> KernelResources:
    """A kernel's resources from its compile metadata, its IR (inline-assembly `tcgen05.alloc`
    the allocator does not count) and ptxas's log ("" where ptxas did not run)."""
    allocs = [int(n) for n in TCGEN05_ALLOC.findall(ir_text)]
    regs = [int(n) for n in PTXAS_REGISTERS.findall(ptxas_log)]
    frames = [(int(a), int(b)) for a, b in PTXAS_FRAME.findall(ptxas_log)]
    return KernelResources(
        target=target, shared_bytes=int(metadata["shared"]),
        tmem_columns=max(int(metadata.get("tmem_size") or 0), sum(allocs)),
        num_warps=int(metadata["num_warps"]),
        registers=max(regs) if regs else None,
        spill_store_bytes=max(b for _, b in frames) if frames else None,
        stack_bytes=max(a for a, _ in frames) if frames else None)


def compile_for_target(launch: Launch, target: str) -> dict[str, Any]:
    """One launch's resources on `target`: compiled through ptxas where it sets `maxnreg`
    (the one way its registers can exceed its block's), else up to Triton's allocation."""
    import triton
    kernel = _find_kernel(launch)
    constexprs = {k: _decode_constexpr(v) for k, v in launch.constexprs.items()}
    src = triton.compiler.ASTSource(fn=kernel, signature=launch.signature, constexprs=constexprs)
    options = dict(launch.options)
    if options.get("maxnreg") is not None:
        log = io.StringIO()
        with contextlib.redirect_stdout(log):  # TRITON_DUMP_PTXAS_LOG prints ptxas -v here
            compiled = triton.compile(src, target=parse_target(target), options=options)
        res = measure(compiled_metadata(compiled), compiled.asm.get("ttgir", ""), target,
                      log.getvalue())
    else:
        try:
            with _stop_after_allocation():
                triton.compile(src, target=parse_target(target), options=options)
            raise RuntimeError("triton.compile finished without reaching its allocation")
        except _AllocationRead as read:
            res = measure(read.metadata, read.ir_text, target, "")
    return {"resources": asdict(res)}


def _names_what_triton_lacks(exc: BaseException) -> bool:
    """Whether the compile failed on an attribute absent from one of Triton's own modules
    (`tl.libdevice`, Triton 2's; `tl.math.log1p`): Triton's front end wraps the
    AttributeError, whose `obj` is the module, in its CompilationErrors."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        owner = getattr(cause, "obj", None) if isinstance(cause, AttributeError) else None
        if isinstance(owner, types.ModuleType) and owner.__name__.split(".")[0] == "triton":
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def _refused_by_the_compiler(exc: Exception) -> bool:
    """Whether Triton's front end refused the kernel's source (a name it does not define, a
    construct it does not support, item assignment to a tensor): what the interpreter runs
    and no GPU's compiler will."""
    from triton.compiler.errors import CompilationError
    return isinstance(exc, CompilationError)


def main(argv: list[str]) -> int:
    """Compile each requested (launch, target), appending one JSON line per result."""
    with open(argv[2], "a") as out:
        for job in json.loads(Path(argv[1]).read_text()):
            start = time.perf_counter()
            try:
                result = compile_for_target(Launch(**job["launch"]), job["target"])
            except Exception as exc:  # noqa: BLE001 - this launch's result, not the child's end
                # a front-end error's first line is its place ("at 4:27:"), its reason last
                text = str(getattr(exc, "error_message", None) or exc)
                first = (text.strip().splitlines() or [""])[0][:400]
                result = {"error": f"does not compile for {job['target']}: "
                                   f"{type(exc).__name__}: {first}", "timeout": False,
                          "refused": _refused_by_the_compiler(exc),
                          "absent_from_triton": _names_what_triton_lacks(exc)}
            result["seconds"] = round(time.perf_counter() - start, 2)
            out.write(json.dumps(result) + "\n")
            out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
