"""RES-02 resource budget: compiled kernels fit the target's hardware; device memory held by
the candidate returns to its baseline after a call; a call finishes within a wall-clock budget
relative to the reference.

Four parts, each tolerance-free:
- *held memory*: one warm-up call (lazy initialisation, caches, autotuning), then further calls
  on the benchmark's inputs, each followed by the worker's `memory` count
  (`torch.cuda.memory_allocated` on CUDA; live tensor bytes reachable from Python on the
  CPU) and by the judge's own reading of the resident memory of the worker's processes
  (/proc, which the candidate cannot patch). Memory that grows with every call is
  `memory_leak`: the worker's count by any amount, the resident memory by more than the
  allocator may keep (RSS_SLACK_BYTES). On CUDA the device count is the worker's word only.
- *wall clock* (CUDA only: through the Triton interpreter, CPU timings say nothing about the
  kernel): the median call must stay within HANG_FACTOR times the reference's median, or
  HANG_FLOOR_S, whichever is larger (`time_over_budget`). A call that never returns is killed
  by the sandbox after its call timeout (`hang`), on every device.
- *compiled Triton resources*: every Triton launch those calls made is compiled for each
  declared target (GateOptions.targets) without a GPU (kdiff.sandbox.launches) and its shared
  memory, registers (where a launch's `maxnreg` lets them exceed a block's: without it ptxas
  fits them to the block) and, on sm_100, tensor-memory columns are held against the limits
  below (`shared_over_budget`, `registers_over_budget`, `tmem_over_budget`). Launches an
  autotuner chose among are alternatives: on hardware the autotuner drops a config that does
  not fit, so they fail only when none fits. A candidate that launches no Triton kernel has
  nothing to compile: that part is skipped, with the reason; but a candidate whose source
  (read by the judge) launches a `@triton.jit` kernel (`kernel[grid](...)`) while the worker
  recorded none has hidden its launches from the recorder in its process: `launches_hidden`.
  A kernel launched in the source and missing from a non-empty record is named in the detail
  (a branch the calls did not take cannot be told from a hidden launch). A kernel Triton's
  front end refuses (a name it does not define, item assignment to a tensor: what the
  interpreter runs and no GPU's compiler will) is `does_not_compile` once the kernel's own
  file is refused as well as the judge's module of it; any other compile error leaves the
  launch not measured, and where no launch could be measured for any target the gate is
  undecided (`error`), never a pass.
  The judge compiles a kernel from its own module of the kernel's file
  (kdiff.sandbox.kernel_source); a kernel that needs its module's code run is compiled by importing
  it, and a fit only that code reported (outside kdiff's own corpus) leaves the gate
  undecided (`error`), never a pass.
- *compiled extensions*: every kernel of every CUDA extension the candidate built (the shared
  objects in the worker's own folder, read with cuobjdump: kdiff.gates.extension_resources), for
  each architecture the binary holds SASS for, against the same per-thread register limit and
  the static shared-memory limit. The binary holds no launch configuration, so registers per
  block and dynamic shared memory are not judged there; spills are reported, not failed.
  Without cuobjdump (a CPU machine with neither a toolkit nor Triton) the part is skipped.
"""

from __future__ import annotations

import ast
import math
import os
import statistics
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import torch

from kdiff.data.model import GateClass, GateResult, Status
from kdiff.gates.base import Gate, chosen_for_verdict
from kdiff.gates.extension_resources import (
    MAX_OBJECTS,
    ExtensionKernel,
    ReadError,
    ResourceUsage,
    base_arch,
    extension_objects,
    find_cuobjdump,
    read_resource_usage,
)
from kdiff.judging.context import HANG_FACTOR, HANG_FLOOR_S, GateContext
from kdiff.sandbox.kernel_source import triton_kernel_names
from kdiff.sandbox.launches import KernelResources, Launch, ResourceCache, file_digest
from kdiff.sandbox.replies import UnusableOutput

CALLS_AFTER_WARMUP = 3  # memory must grow across every one of them to be a leak
# Resident memory an honest worker may add in one call without leaking: glibc's malloc keeps
# freed memory below its trim threshold, which its dynamic mmap threshold raises to at most
# 2 x DEFAULT_MMAP_THRESHOLD_MAX = 2 x 32 MiB on 64-bit (mallopt(3)). Growth beyond that in
# every call is memory kept, whatever the worker's own count says.
RSS_SLACK_BYTES = 64 << 20
_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


def resident_bytes(root: int) -> int:
    """The resident memory of process `root` and its descendants, read from /proc by the
    judge (statm's second field, in pages)."""
    parents: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    parents[int(name)] = int(f.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    tree, grown = {root}, True
    while grown:
        more = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= more
        grown = bool(more)
    total = 0
    for pid in tree:
        try:
            with open(f"/proc/{pid}/statm", "rb") as f:
                total += int(f.read().split()[1]) * _PAGE_BYTES
        except (OSError, IndexError, ValueError):
            continue
    return total


def triton_launch_sites(source: str) -> list[str]:
    """The `@triton.jit` kernels (autotuned or not) that a module's source launches with
    `kernel[grid](...)`, read by the judge from the file itself."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    kernels = triton_kernel_names(tree)
    launched = {
        node.func.value.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Subscript)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in kernels
    }
    return sorted(launched)


def measured_draws(ctx: GateContext, gate: str) -> list[list[Any]]:
    """The benchmark's get_inputs() for the warm-up call and the CALLS_AFTER_WARMUP after it,
    each at a seed of its own from the verdict's chosen seed: RES-02 alone measures memory and
    records launches across calls, so a kernel that makes fixed draws beforehand could leak,
    or launch past a target's limits, on every other input
    (tests/hostile/knows_the_judges_resource_draws.py)."""
    seed = chosen_for_verdict(ctx)
    return [
        ctx.benchmark_inputs(seed.of(f"{gate} get_inputs() {i}"))
        for i in range(1 + CALLS_AFTER_WARMUP)
    ]


@dataclass(frozen=True)
class TargetLimits:
    shared_bytes: int  # dynamic shared memory one block may opt in to
    registers_per_thread: int
    registers_per_block: int
    register_unit: int  # registers are allocated per warp in units of this many
    tmem_columns: int | None  # tensor memory a CTA may allocate (None: no TMEM)
    static_shared_bytes: int  # statically sized shared memory, as the target's binary counts it


LIMITS = {
    # CUDA C++ Programming Guide, "Technical Specifications per Compute Capability", 8.0:
    # 163 KB shared memory per block (cudaDevAttrMaxSharedMemoryPerBlockOptin = 166912 on A100),
    # 255 registers per thread, 64K 32-bit registers per block; register allocation unit
    # 256 per warp (CUDA Occupancy Calculator).
    # Static shared memory, every target: "Kernels relying on shared memory allocations over
    # 48 KB per block are architecture-specific, and must use dynamic shared memory rather than
    # statically sized arrays" (same guide, Shared Memory sections of 8.x, 9.0 and 10.0);
    # ptxas refuses more ("uses too much shared data (0xc004 bytes, 0xc000 max)"). From sm_90 on
    # the cubin places the 1 KiB the driver reserves per block
    # (cudaDevAttrReservedSharedMemoryPerBlock) inside the function's shared window, so a
    # 48 KiB array reads SHARED:50176 there and 49152 on sm_80 (nvcc 13.0, and ptxas 12.9 on
    # sm_90; cuobjdump 13.1).
    "sm_80": TargetLimits(166912, 255, 65536, 256, None, 49152),
    # Same table, 9.0 (H100): 227 KB = 232448 bytes per block (the value the driver reports as
    # MaxSharedMemoryPerBlockOptin and Triton's launcher checks `metadata.shared` against).
    "sm_90": TargetLimits(232448, 255, 65536, 256, None, 49152 + 1024),
    # 10.0 (B200): 228 KB per SM, 227 KB = 232448 bytes per block, as on 9.0. Tensor memory:
    # 128 lanes x 512 columns of 32 bits per SM; tcgen05.alloc takes 32..512 columns (PTX ISA,
    # "Tensor Memory"); Triton's launcher raises OutOfResources("tensor memory") when the
    # compiled `tmem_size` exceeds 512.
    "sm_100": TargetLimits(232448, 255, 65536, 256, 512, 49152 + 1024),
}


@dataclass
class Violation:
    signature: str
    text: str


def violations(res: KernelResources, limits: TargetLimits) -> list[Violation]:
    """Every limit one compiled kernel exceeds on its target."""
    found = []
    if res.shared_bytes > limits.shared_bytes:
        found.append(
            Violation(
                "shared_over_budget",
                f"shared memory {res.shared_bytes} B > {limits.shared_bytes} B per block",
            )
        )
    if limits.tmem_columns is not None and res.tmem_columns > limits.tmem_columns:
        found.append(
            Violation(
                "tmem_over_budget",
                f"tensor memory {res.tmem_columns} columns > {limits.tmem_columns} per CTA",
            )
        )
    if res.registers is not None:
        per_warp = math.ceil(res.registers * 32 / limits.register_unit) * limits.register_unit
        per_block = per_warp * res.num_warps
        if res.registers > limits.registers_per_thread:
            found.append(
                Violation(
                    "registers_over_budget",
                    f"{res.registers} registers per thread > {limits.registers_per_thread}",
                )
            )
        elif per_block > limits.registers_per_block:
            found.append(
                Violation(
                    "registers_over_budget",
                    f"{res.registers} registers x "
                    f"{res.num_warps} warps = {per_block} per block > "
                    f"{limits.registers_per_block}",
                )
            )
    return found


def extension_violations(kernel: ExtensionKernel, limits: TargetLimits) -> list[Violation]:
    """Every limit one kernel of a compiled extension exceeds: those a binary can show. Its
    block size and dynamic shared memory are launch arguments, not in the file."""
    found = []
    if kernel.shared_bytes > limits.static_shared_bytes:
        found.append(
            Violation(
                "shared_over_budget",
                f"static shared memory "
                f"{kernel.shared_bytes} B > {limits.static_shared_bytes} B per "
                f"block",
            )
        )
    if kernel.registers > limits.registers_per_thread:
        found.append(
            Violation(
                "registers_over_budget",
                f"{kernel.registers} registers per thread > {limits.registers_per_thread}",
            )
        )
    return found


def describe_extension_kernel(kernel: ExtensionKernel) -> str:
    parts = [f"{kernel.registers} regs", f"static shared {kernel.shared_bytes} B"]
    if kernel.stack_bytes:
        parts.append(f"stack {kernel.stack_bytes} B (spills, local arrays)")
    if kernel.local_bytes:
        parts.append(f"local {kernel.local_bytes} B")
    return f"{kernel.function}: {', '.join(parts)}"


def describe(res: KernelResources) -> str:
    parts = [f"shared {res.shared_bytes} B"]
    if res.tmem_columns:
        parts.append(f"tmem {res.tmem_columns} col")
    if res.registers is not None:
        parts.append(f"{res.registers} regs x {res.num_warps} warps")
    if res.spill_store_bytes:
        parts.append(f"{res.spill_store_bytes} B spilled")
    return ", ".join(parts)


LOST = {"error": "no longer recorded (the worker restarted)"}


@dataclass
class PartOutcome:
    failure: GateResult | None
    note: str
    undecided: str | None = None  # what the judge could not check itself


def trusted(launch: Launch, outcome: dict[str, Any]) -> bool:
    """Whether the judge takes a compile result: computed from its own module of the kernel's
    file ("checked"), or by a child that imported a file of kdiff's own corpus (kdiff.kernels)
    by its path or by the name it has there. Any other child ran code a candidate may have
    written, and its report is that code's word."""
    if outcome.get("checked"):
        return True
    corpus = Path(str(files("kdiff.kernels"))).resolve()
    path = Path(launch.file).resolve()
    if not path.is_relative_to(corpus) or path.suffix != ".py":
        return False
    name = ".".join(("kdiff", "kernels", *path.relative_to(corpus).with_suffix("").parts))
    return launch.module.startswith("kdiff_") or launch.module == name


class ResourceBudget(Gate):
    id = "RES-02"
    name = "resource budget"
    klass = GateClass.TOLERANCE_FREE
    judges_values = False  # resources and hangs, whatever the outputs
    shares_calls = False  # memory and time are measured per call
    summary = (
        "compiled Triton kernels within each target's shared memory, registers and "
        "TMEM, and CUDA extension kernels within the static shared memory and register "
        "limits; device memory back to baseline after a call; no hang"
    )

    def judge(self, ctx: GateContext) -> GateResult:
        # The reference first, as every gate that compares does: a problem whose reference
        # fails on its own benchmark inputs (it returns no tensor, say) is outside its
        # contract, and a candidate that does as it does is not to blame (ReferenceFailure:
        # a skip).
        draws = measured_draws(ctx, self.id)
        ctx.run_reference(draws[0])
        ctx.candidate.request("launches", clear=True)  # judge the launches of these calls only
        memory, seconds = self.held_memory(ctx, draws)
        notes, undecided = [], []
        for judge_part in (
            lambda: memory,
            lambda: self.wall_clock(ctx, draws, seconds),
            lambda: self.compiled(ctx),
            lambda: self.extensions(ctx),
        ):
            part = judge_part()
            if part.failure is not None:
                return part.failure
            notes.append(part.note)
            undecided += [part.undecided] if part.undecided else []
        if undecided:  # no failure, and not every fit checked: undecided, never a pass
            return self.result(Status.ERROR, "; ".join(undecided + notes))
        return self.result(Status.PASS, "; ".join(notes))

    # -- held memory ----------------------------------------------------------------------
    def held_memory(
        self, ctx: GateContext, draws: list[list[Any]]
    ) -> tuple[PartOutcome, list[float]]:
        held, resident, seconds = [], [], []
        for inputs in draws:
            got = ctx.call(inputs)
            seconds.append(got.seconds)
            held.append(int(ctx.candidate.request("memory")["bytes"]))
            pid = ctx.candidate.pid
            resident.append(resident_bytes(pid) if pid is not None else 0)
        what = "device memory" if ctx.device == "cuda" else "live tensor bytes"
        for name, counts, slack in (
            (f"{what} (the worker's count)", held, 0),
            ("resident memory of the worker (read by the judge)", resident, RSS_SLACK_BYTES),
        ):
            growth = [b - a for a, b in zip(counts, counts[1:])]
            if all(g > slack for g in growth):
                return PartOutcome(
                    self.result(
                        Status.FAIL,
                        f"{name} grows with every call: {counts[0]} B after the "
                        f"warm-up call, then {', '.join(f'+{g}' for g in growth)} B over "
                        f"{CALLS_AFTER_WARMUP} more calls (benchmark get_inputs() at seeds of "
                        f"their own from {chosen_for_verdict(ctx)})",
                        "memory_leak",
                    ),
                    "",
                ), seconds[1:]
        return PartOutcome(
            None,
            f"{what} held after the warm-up call and {CALLS_AFTER_WARMUP} "
            f"more: {', '.join(map(str, held))} B; resident "
            f"{', '.join(f'{r >> 20}' for r in resident)} MiB",
        ), seconds[1:]

    # -- wall clock -----------------------------------------------------------------------
    def wall_clock(
        self, ctx: GateContext, draws: list[list[Any]], candidate_seconds: list[float]
    ) -> PartOutcome:
        if ctx.device != "cuda":
            return PartOutcome(
                None,
                "wall clock: the relative budget is judged on CUDA only "
                "(the Triton interpreter makes CPU timings meaningless); the "
                "sandbox's call timeout still applies",
            )
        key = ctx.reference_key_in_worker()
        reference = []
        for draw in draws:
            inputs = [x.cpu() if isinstance(x, torch.Tensor) else x for x in draw]
            reference.append(ctx.candidate.request("call", key=key, inputs=inputs)["seconds"])
        ref = statistics.median(reference[1:])
        cand = statistics.median(candidate_seconds)
        budget = max(HANG_FACTOR * ref, HANG_FLOOR_S)
        text = (
            f"median call {cand * 1e3:.3g} ms, reference {ref * 1e3:.3g} ms, budget "
            f"{budget * 1e3:.3g} ms"
        )
        if cand > budget:
            return PartOutcome(
                self.result(Status.FAIL, f"wall clock: {text}", "time_over_budget"), ""
            )
        return PartOutcome(None, f"wall clock: {text}")

    # -- compiled resources ---------------------------------------------------------------
    def compiled(self, ctx: GateContext) -> PartOutcome:
        listed = ctx.candidate.request("launches")
        try:
            launches = [Launch(**item["launch"]) for item in listed["launches"]]
        except (KeyError, TypeError) as exc:
            raise UnusableOutput(f"malformed reply to `launches`: {exc!r}") from None
        # The judge's own reading of the source, against the worker's record.
        try:
            sites = triton_launch_sites(ctx.candidate.candidate.read_text(errors="replace"))
        except OSError:
            sites = []
        unrecorded = sorted(
            set(sites) - {launch.qualname.rsplit(".", 1)[-1] for launch in launches}
        )
        if not launches:
            if sites:
                return PartOutcome(
                    self.result(
                        Status.FAIL,
                        f"the candidate's source launches the Triton kernel(s) "
                        f"{', '.join(sites)}, and its worker recorded no launch in "
                        f"{1 + CALLS_AFTER_WARMUP} calls: the launches were hidden from the "
                        f"recorder, or the kernels never ran",
                        "launches_hidden",
                    ),
                    "",
                )
            return PartOutcome(
                None, "compiled resources: skipped, the candidate launched no Triton kernel"
            )
        notes = []
        if unrecorded:  # a branch these calls did not take, or a launch hidden: not judged
            notes.append(
                f"launched in the source, never recorded (not judged): {', '.join(unrecorded)}"
            )
        if listed.get("dropped"):
            notes.append(f"{listed['dropped']} further distinct launches not compiled")
        unknown = [t for t in ctx.options.targets if t not in LIMITS]
        if unknown:
            notes.append(f"no limits known for {', '.join(unknown)}: not judged")
        targets = [t for t in ctx.options.targets if t in LIMITS]
        outcomes = self.resources(ctx, launches, targets)
        judged_any, unverified = False, []
        for target in targets:
            per_launch = [outcomes.get((launch.key(), target), LOST) for launch in launches]
            failure, summary, judged, words = self.judge_target(launches, per_launch, target)
            if failure is not None:
                return PartOutcome(failure, "")
            judged_any |= judged
            unverified += words
            notes.append(summary)
        left = [key for key, outcome in outcomes.items() if outcome.get("over_budget")]
        if left:  # "not measured" passes: a candidate could list slow decoys before a launch
            return PartOutcome(
                self.result(
                    Status.FAIL,
                    f"compiled resources: {len(left)} of {len(launches) * len(targets)} "
                    f"compiles left when the case's wall budget of "
                    f"{ctx.candidate.limits.case_timeout:.0f} s was spent",
                    "case_timeout",
                ),
                "",
            )
        if unverified:
            return PartOutcome(
                None,
                "compiled resources: " + "; ".join(notes),
                (
                    f"compiled resources not decided: {len(unverified)} launch(es) on which only "
                    f"the kernel's own module reported, or whose compile did not finish "
                    f"({unverified[0]})"
                ),
            )
        if not judged_any and targets:
            # Launches ran and not one could be compiled: no fit was checked, and the other
            # parts of the gate cannot stand for this one (a pass would say the kernels fit)
            return PartOutcome(
                None,
                "compiled resources: " + "; ".join(notes),
                f"compiled resources not decided: none of {len(launches)} launch(es) could be "
                f"compiled for {', '.join(targets)}",
            )
        if not judged_any:
            return PartOutcome(
                None, "compiled resources: skipped, no target with known limits (" +
                "; ".join(notes) + ")"
            )
        return PartOutcome(None, "compiled resources: " + "; ".join(notes))

    def resources(
        self, ctx: GateContext, launches: list[Launch], targets: list[str]
    ) -> dict[tuple[str, str], dict[str, Any]]:
        """Per (launch key, target), the compile outcome: from the judge's cache, or compiled
        in confined children of the sandbox's, one per kernel file (kdiff.sandbox.launches:
        from the judge's own module of the file where it can), one target after another.
        Once a target is known to fail, the gate's verdict is known: the targets left are not
        compiled (the red team's 128 x 1024 tile fails sm_100's tensor memory in 3 s of
        compiling; its sm_90 compile, spilling 18 KB, takes 15.6 s more)."""
        cache = self.cache(ctx)
        outcomes: dict[tuple[str, str], dict[str, Any]] = {}
        jobs = []  # what the cache does not hold, target by target
        for target in targets:
            for launch in launches:
                cached = cache.get(launch, target) if cache else None
                if cached is None:
                    jobs.append((launch, target))
                else:
                    outcomes[(launch.key(), target)] = cached

        def failed_target(partial: list[dict[str, Any] | None]) -> str | None:
            known = {
                **outcomes,
                **{
                    (launch.key(), target): outcome
                    for (launch, target), outcome in zip(jobs, partial)
                    if outcome is not None
                },
            }
            for target in targets:
                per_launch = [known.get((launch.key(), target)) for launch in launches]
                if None in per_launch:
                    return None
                if self.judge_target(launches, per_launch, target)[0] is not None:
                    return f"not compiled: the kernels already exceed {target}'s limits"
            return None

        # A failure the cache already shows needs no compiler (a re-run of a failing kernel).
        if jobs and failed_target([None] * len(jobs)) is None:
            for (launch, target), outcome in zip(
                jobs,
                ctx.candidate.compile_launches(
                    jobs, stop=failed_target, modules=cache.modules if cache else None
                ),
            ):
                if cache:
                    cache.put(launch, target, outcome)
                outcomes[(launch.key(), target)] = outcome
        return outcomes

    @staticmethod
    def cache(ctx: GateContext) -> ResourceCache | None:
        """This candidate's compile results from earlier runs, or None where the disk cache
        cannot be trusted: a worker whose writes are not confined (CUDA; a kernel without
        Landlock) could have written any entry of it."""
        owner = file_digest(str(ctx.candidate.candidate))
        if owner is None or not ctx.candidate.writes_confined:
            return None
        return ResourceCache(owner)

    def judge_target(
        self, launches: list[Launch], outcomes: list[dict[str, Any]], target: str
    ) -> tuple[GateResult | None, str, bool, list[str]]:
        """The target's failure (or None), its summary, whether any kernel was judged, and the
        fits and compile failures the judge could not check (`trusted`): a violation is
        believed whoever reports it, a fit or a failure to compile only from a result the
        judge trusts."""
        limits = LIMITS[target]
        groups: dict[str, list[tuple[Launch, list[Violation]]]] = {}
        fitting, unmeasured, unverified = [], [], []
        for launch, outcome in zip(launches, outcomes):
            if outcome.get("refused") and outcome.get("checked") is False:
                # Triton's front end refused the file's own module of the kernel, not only
                # the judge's (kdiff.sandbox.launches.compile_launches compiles it again so
                # for a refusal; one still compiling is not yet confirmed): it runs through
                # the interpreter only, on no GPU.
                groups.setdefault(launch.alternatives_key() or launch.key(), []).append(
                    (
                        launch,
                        [
                            Violation(
                                "does_not_compile",
                                f"Triton refuses to compile it ({outcome['error']})",
                            )
                        ],
                    )
                )
                continue
            if "resources" not in outcome:
                if outcome.get("checked") is False and not trusted(launch, outcome):
                    # The child ran the candidate's file, which can fail there alone (it
                    # raises where Triton's interpreter is off): that failure is its word,
                    # and no fit (tests/hostile/hides_its_tile_from_the_compiler.py).
                    unverified.append(
                        f"{target}: {launch.label()}: not compiled from its "
                        f"own module ({outcome.get('unchecked')}): "
                        f"{outcome['error']}"
                    )
                elif outcome.get("timeout") or outcome.get("killed"):
                    # How long a compile takes, and how much memory, is the kernel's to
                    # choose (an unrolled loop): one past its deadline, or killed (at its
                    # memory limit), is a fit not checked, never a pass.
                    unverified.append(f"{target}: {launch.label()}: {outcome['error']}")
                else:
                    unmeasured.append(f"{launch.label()}: {outcome['error']}")
                continue
            res = KernelResources(**outcome["resources"])
            found = violations(res, limits)
            groups.setdefault(launch.alternatives_key() or launch.key(), []).append((launch, found))
            if not found and not trusted(launch, outcome):
                unverified.append(
                    f"{target}: {launch.label()}: not read without running its "
                    f"module: {outcome.get('unchecked')}"
                )
            elif not found:
                fitting.append(f"{launch.qualname}: {describe(res)}")
        for members in groups.values():
            if all(found for _, found in members):  # no alternative fits
                launch, found = members[0]
                pruned = (
                    f" (and the {len(members) - 1} other autotuner configs)"
                    if len(members) > 1
                    else ""
                )
                return (
                    self.result(
                        Status.FAIL,
                        f"{target}: {launch.label()}{pruned}: " + "; ".join(v.text for v in found),
                        found[0].signature,
                    ),
                    "",
                    True,
                    [],
                )
        summary = f"{target}: {len(groups)} kernel(s) fit"
        if fitting:
            summary += " (" + "; ".join(fitting[:3]) + ")"
        if unmeasured:
            summary += f"; {len(unmeasured)} not measured ({unmeasured[0]})"
        return None, summary, bool(groups), unverified

    # -- compiled extensions --------------------------------------------------------------
    def extensions(self, ctx: GateContext) -> PartOutcome:
        objects = extension_objects(ctx.candidate.workdir)
        if not objects:
            return PartOutcome(None, "compiled extensions: none built")
        cuobjdump = find_cuobjdump()
        if cuobjdump is None:
            return PartOutcome(
                None,
                f"compiled extensions: skipped, {len(objects)} shared "
                "object(s) built and no cuobjdump to read them (not on PATH, "
                "not in CUDA_HOME, no Triton copy)",
            )
        usages: list[ResourceUsage] = []
        unread = []
        for path in objects[:MAX_OBJECTS]:
            try:
                usage = read_resource_usage(path, cuobjdump)
            except ReadError as exc:
                unread.append(str(exc))
                continue
            if usage is not None:
                usages.append(usage)
        left_out = len(objects) - len(objects[:MAX_OBJECTS])
        if not any(u.kernels or u.ptx_only for u in usages) and not unread and not left_out:
            return PartOutcome(
                None,
                f"compiled extensions: no CUDA kernel in the {len(objects)} shared object(s) built",
            )
        outcome = self.judge_extensions(usages, unread, ctx.options.targets)
        if left_out and outcome.failure is None:
            outcome.note += f"; {left_out} shared objects past the first {MAX_OBJECTS} not read"
        return outcome

    def judge_extensions(
        self, usages: list[ResourceUsage], unread: list[str], targets: list[str]
    ) -> PartOutcome:
        by_arch: dict[str, list[ExtensionKernel]] = {}
        for kernel in (k for usage in usages for k in usage.kernels):
            by_arch.setdefault(kernel.arch or "unknown arch", []).append(kernel)
        notes = []
        for arch, kernels in sorted(by_arch.items()):
            limits = LIMITS.get(base_arch(arch))
            if limits is None:
                notes.append(f"{arch}: {len(kernels)} kernel(s), no limits known: not judged")
                continue
            for kernel in kernels:
                found = extension_violations(kernel, limits)
                if found:
                    return PartOutcome(
                        self.result(
                            Status.FAIL,
                            f"{arch}: {kernel.function} in {Path(kernel.file).name}: "
                            + "; ".join(v.text for v in found),
                            found[0].signature,
                        ),
                        "",
                    )
            notes.append(
                f"{arch}: {len(kernels)} kernel(s) fit ("
                + "; ".join(describe_extension_kernel(k) for k in kernels[:3])
                + ")"
            )
        ptx_only = sorted({a for usage in usages for a in usage.ptx_only} - set(by_arch))
        if ptx_only:
            notes.append(
                f"PTX only for {', '.join(ptx_only)} (the driver compiles it at load: "
                "resources not in the file)"
            )
        if by_arch:
            built = {base_arch(a) for a in by_arch}
            unbuilt = [t for t in targets if t not in built]
            if unbuilt:
                notes.append(f"not built for {', '.join(unbuilt)}")
        if unread:
            notes.append(f"{len(unread)} object(s) unread ({unread[0]})")
        if not by_arch:
            return PartOutcome(
                None,
                "compiled extensions: skipped, no kernel machine code in "
                "the shared objects built" + (f" ({'; '.join(notes)})" if notes else ""),
            )
        return PartOutcome(None, "compiled extensions: " + "; ".join(notes))
