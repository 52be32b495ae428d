"""RES-02 resource budget: compiled kernels fit the target's hardware; device memory held by
the candidate returns to its baseline after a call; a call finishes within a wall-clock budget
relative to the reference.

Four parts, each tolerance-free:
- *held memory*: one warm-up call (lazy initialisation, caches, autotuning), then further calls
  on the benchmark's inputs, each followed by the worker's `memory` count
  (`torch.cuda.memory_allocated` on CUDA; live tensor bytes reachable from Python on the
  CPU). Memory that grows with every call is `memory_leak`.
- *wall clock* (CUDA only: through the Triton interpreter, CPU timings say nothing about the
  kernel): the median call must stay within HANG_FACTOR times the reference's median, or
  HANG_FLOOR_S, whichever is larger (`time_over_budget`). A call that never returns is killed
  by the sandbox after its call timeout (`hang`), on every device.
- *compiled Triton resources*: every Triton launch those calls made is compiled for each
  declared target (GateOptions.targets) without a GPU (kdiff.triton_launches) and its shared
  memory, registers and, on sm_100, tensor-memory columns are held against the limits below
  (`shared_over_budget`, `registers_over_budget`, `tmem_over_budget`). Launches an
  autotuner chose among are alternatives: on hardware the autotuner drops a config that does
  not fit, so they fail only when none fits. A candidate that launches no Triton kernel has
  nothing to compile: that part is skipped, with the reason.
- *compiled extensions*: every kernel of every CUDA extension the candidate built (the shared
  objects in the worker's own folder, read with cuobjdump: kdiff.extension_resources), for
  each architecture the binary holds SASS for, against the same per-thread register limit and
  the static shared-memory limit. The binary holds no launch configuration, so registers per
  block and dynamic shared memory are not judged there; spills are reported, not failed.
  Without cuobjdump (a CPU machine with neither a toolkit nor Triton) the part is skipped.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from kdiff.extension_resources import (MAX_OBJECTS, ExtensionKernel, ReadError, ResourceUsage,
                                      base_arch, extension_objects, find_cuobjdump,
                                      read_resource_usage)
from kdiff.gates import inputs as gen
from kdiff.gates.base import HANG_FACTOR, HANG_FLOOR_S, Gate, GateContext
from kdiff.model import GateClass, GateResult, Status
from kdiff.triton_launches import KernelResources, Launch, ResourceCache

CALLS_AFTER_WARMUP = 3  # memory must grow across every one of them to be a leak
INPUT_SEED = 0  # benchmark draws INPUT_SEED, INPUT_SEED + 1, ...



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
        found.append(Violation("shared_over_budget", f"shared memory {res.shared_bytes} B > "
                               f"{limits.shared_bytes} B per block"))
    if limits.tmem_columns is not None and res.tmem_columns > limits.tmem_columns:
        trap = " (Triton compiled the kernel to a bare trap)" if res.trap_only else ""
        found.append(Violation("tmem_over_budget", f"tensor memory {res.tmem_columns} columns "
                               f"> {limits.tmem_columns} per CTA{trap}"))
    if res.registers is not None:
        per_warp = math.ceil(res.registers * 32 / limits.register_unit) * limits.register_unit
        per_block = per_warp * res.num_warps
        if res.registers > limits.registers_per_thread:
            found.append(Violation("registers_over_budget", f"{res.registers} registers per "
                                   f"thread > {limits.registers_per_thread}"))
        elif per_block > limits.registers_per_block:
            found.append(Violation("registers_over_budget", f"{res.registers} registers x "
                                   f"{res.num_warps} warps = {per_block} per block > "
                                   f"{limits.registers_per_block}"))
    return found


def extension_violations(kernel: ExtensionKernel, limits: TargetLimits) -> list[Violation]:
    """Every limit one kernel of a compiled extension exceeds: those a binary can show. Its
    block size and dynamic shared memory are launch arguments, not in the file."""
    found = []
    if kernel.shared_bytes > limits.static_shared_bytes:
        found.append(Violation("shared_over_budget", f"static shared memory "
                               f"{kernel.shared_bytes} B > {limits.static_shared_bytes} B per "
                               f"block"))
    if kernel.registers > limits.registers_per_thread:
        found.append(Violation("registers_over_budget", f"{kernel.registers} registers per "
                               f"thread > {limits.registers_per_thread}"))
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


class ResourceBudget(Gate):
    id = "RES-02"
    name = "resource budget"
    klass = GateClass.TOLERANCE_FREE
    judges_values = False  # resources and hangs, whatever the outputs
    summary = ("compiled Triton kernels within each target's shared memory, registers and "
               "TMEM, and CUDA extension kernels within the static shared memory and register "
               "limits; device memory back to baseline after a call; no hang")

    def judge(self, ctx: GateContext) -> GateResult:
        ctx.candidate.request("launches", clear=True)  # judge the launches of these calls only
        memory, seconds = self.held_memory(ctx)
        notes = []
        for judge_part in (lambda: memory, lambda: self.wall_clock(ctx, seconds),
                           lambda: self.compiled(ctx), lambda: self.extensions(ctx)):
            part = judge_part()
            if part.failure is not None:
                return part.failure
            notes.append(part.note)
        return self.result(Status.PASS, "; ".join(notes))

    # -- held memory ----------------------------------------------------------------------
    def held_memory(self, ctx: GateContext) -> tuple[PartOutcome, list[float]]:
        held, seconds = [], []
        for i in range(1 + CALLS_AFTER_WARMUP):
            got = ctx.call(ctx.benchmark_inputs(INPUT_SEED + i))
            seconds.append(got.seconds)
            held.append(int(ctx.candidate.request("memory")["bytes"]))
        what = "device memory" if ctx.device == "cuda" else "live tensor bytes"
        growth = [b - a for a, b in zip(held, held[1:])]
        if all(g > 0 for g in growth):
            return PartOutcome(self.result(
                Status.FAIL, f"{what} held by the candidate grow with every call: {held[0]} B "
                f"after the warm-up call, then {', '.join(f'+{g}' for g in growth)} B over "
                f"{CALLS_AFTER_WARMUP} more calls", "memory_leak"), ""), seconds[1:]
        return PartOutcome(None, f"{what} held after the warm-up call and {CALLS_AFTER_WARMUP} "
                           f"more: {', '.join(map(str, held))} B"), seconds[1:]

    # -- wall clock -----------------------------------------------------------------------
    def wall_clock(self, ctx: GateContext, candidate_seconds: list[float]) -> PartOutcome:
        if ctx.device != "cuda":
            return PartOutcome(None, "wall clock: the relative budget is judged on CUDA only "
                               "(the Triton interpreter makes CPU timings meaningless); the "
                               "sandbox's call timeout still applies")
        key = ctx.reference_key_in_worker()
        reference = []
        for i in range(1 + CALLS_AFTER_WARMUP):
            inputs = [x.cpu() if isinstance(x, torch.Tensor) else x for x in
                      gen.cast_inputs(ctx.benchmark_inputs(INPUT_SEED + i), torch.float32)]
            reference.append(ctx.candidate.request("call", key=key, inputs=inputs)["seconds"])
        ref = statistics.median(reference[1:])
        cand = statistics.median(candidate_seconds)
        budget = max(HANG_FACTOR * ref, HANG_FLOOR_S)
        text = (f"median call {cand * 1e3:.3g} ms, reference {ref * 1e3:.3g} ms, budget "
                f"{budget * 1e3:.3g} ms")
        if cand > budget:
            return PartOutcome(self.result(Status.FAIL, f"wall clock: {text}",
                                           "time_over_budget"), "")
        return PartOutcome(None, f"wall clock: {text}")

    # -- compiled resources ---------------------------------------------------------------
    def compiled(self, ctx: GateContext) -> PartOutcome:
        listed = ctx.candidate.request("launches")
        launches = [Launch(**item["launch"]) for item in listed["launches"]]
        if not launches:
            return PartOutcome(None, "compiled resources: skipped, the candidate launched no "
                               "Triton kernel")
        notes = []
        if listed.get("dropped"):
            notes.append(f"{listed['dropped']} further distinct launches not compiled")
        unknown = [t for t in ctx.options.targets if t not in LIMITS]
        if unknown:
            notes.append(f"no limits known for {', '.join(unknown)}: not judged")
        targets = [t for t in ctx.options.targets if t in LIMITS]
        outcomes = self.resources(ctx, launches, targets)
        judged_any = False
        for target in targets:
            per_launch = [outcomes.get((launch.key(), target), LOST) for launch in launches]
            failure, summary, judged = self.judge_target(launches, per_launch, target)
            if failure is not None:
                return PartOutcome(failure, "")
            judged_any |= judged
            notes.append(summary)
        if not judged_any:
            return PartOutcome(None, "compiled resources: skipped, no launch could be compiled "
                               "(" + "; ".join(notes) + ")")
        return PartOutcome(None, "compiled resources: " + "; ".join(notes))

    def resources(self, ctx: GateContext, launches: list[Launch], targets: list[str]
                  ) -> dict[tuple[str, str], dict[str, Any]]:
        """Per (launch key, target), the compile outcome: from the judge's cache, or compiled
        in a confined child of the sandbox's (it imports the candidate's code), one target
        after another. Once a target is known to fail, the gate's verdict is known: the
        targets left are not compiled (the red team's 128 x 1024 tile fails sm_100's tensor
        memory in 3 s of compiling; its sm_90 compile, spilling 18 KB, took 15.6 s more)."""
        cache = ResourceCache()
        outcomes: dict[tuple[str, str], dict[str, Any]] = {}
        jobs = []  # what the cache does not hold, target by target
        for target in targets:
            for launch in launches:
                cached = cache.get(launch, target)
                if cached is None:
                    jobs.append((launch, target))
                else:
                    outcomes[(launch.key(), target)] = cached

        def failed_target(partial: list[dict[str, Any] | None]) -> str | None:
            known = {**outcomes, **{(launch.key(), target): outcome for (launch, target),
                                    outcome in zip(jobs, partial) if outcome is not None}}
            for target in targets:
                per_launch = [known.get((launch.key(), target)) for launch in launches]
                if None in per_launch:
                    return None
                if self.judge_target(launches, per_launch, target)[0] is not None:
                    return f"not compiled: the kernels already exceed {target}'s limits"
            return None

        # A failure the cache already shows needs no compiler (a re-run of a failing kernel).
        if jobs and failed_target([None] * len(jobs)) is None:
            for (launch, target), outcome in zip(jobs, ctx.candidate.compile_launches(
                    jobs, stop=failed_target)):
                cache.put(launch, target, outcome)
                outcomes[(launch.key(), target)] = outcome
        return outcomes

    def judge_target(self, launches: list[Launch], outcomes: list[dict[str, Any]], target: str
                     ) -> tuple[GateResult | None, str, bool]:
        limits = LIMITS[target]
        groups: dict[str, list[tuple[Launch, list[Violation]]]] = {}
        fitting, unmeasured = [], []
        for launch, outcome in zip(launches, outcomes):
            if "resources" not in outcome:
                unmeasured.append(f"{launch.label()}: {outcome['error']}")
                continue
            res = KernelResources(**outcome["resources"])
            found = violations(res, limits)
            groups.setdefault(launch.alternatives_key() or launch.key(), []).append((launch, found))
            if not found:
                fitting.append(f"{launch.qualname}: {describe(res)}")
        for members in groups.values():
            if all(found for _, found in members):  # no alternative fits
                launch, found = members[0]
                pruned = (f" (and the {len(members) - 1} other autotuner configs)"
                          if len(members) > 1 else "")
                return self.result(
                    Status.FAIL, f"{target}: {launch.label()}{pruned}: "
                    + "; ".join(v.text for v in found), found[0].signature), "", True
        summary = f"{target}: {len(groups)} kernel(s) fit"
        if fitting:
            summary += " (" + "; ".join(fitting[:3]) + ")"
        if unmeasured:
            summary += f"; {len(unmeasured)} not measured ({unmeasured[0]})"
        return None, summary, bool(groups)

    # -- compiled extensions --------------------------------------------------------------
    def extensions(self, ctx: GateContext) -> PartOutcome:
        objects = extension_objects(ctx.candidate.workdir)
        if not objects:
            return PartOutcome(None, "compiled extensions: none built")
        cuobjdump = find_cuobjdump()
        if cuobjdump is None:
            return PartOutcome(None, f"compiled extensions: skipped, {len(objects)} shared "
                               "object(s) built and no cuobjdump to read them (not on PATH, "
                               "not in CUDA_HOME, no Triton copy)")
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
            return PartOutcome(None, f"compiled extensions: no CUDA kernel in the "
                               f"{len(objects)} shared object(s) built")
        outcome = self.judge_extensions(usages, unread, ctx.options.targets)
        if left_out and outcome.failure is None:
            outcome.note += f"; {left_out} shared objects past the first {MAX_OBJECTS} not read"
        return outcome

    def judge_extensions(self, usages: list[ResourceUsage], unread: list[str],
                         targets: list[str]) -> PartOutcome:
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
                    return PartOutcome(self.result(
                        Status.FAIL, f"{arch}: {kernel.function} in {Path(kernel.file).name}: "
                        + "; ".join(v.text for v in found), found[0].signature), "")
            notes.append(f"{arch}: {len(kernels)} kernel(s) fit ("
                         + "; ".join(describe_extension_kernel(k) for k in kernels[:3]) + ")")
        ptx_only = sorted({a for usage in usages for a in usage.ptx_only} - set(by_arch))
        if ptx_only:
            notes.append(f"PTX only for {', '.join(ptx_only)} (the driver compiles it at load: "
                         "resources not in the file)")
        if by_arch:
            built = {base_arch(a) for a in by_arch}
            unbuilt = [t for t in targets if t not in built]
            if unbuilt:
                notes.append(f"not built for {', '.join(unbuilt)}")
        if unread:
            notes.append(f"{len(unread)} object(s) unread ({unread[0]})")
        if not by_arch:
            return PartOutcome(None, "compiled extensions: skipped, no kernel machine code in "
                               "the shared objects built" + (f" ({'; '.join(notes)})"
                                                             if notes else ""))
        return PartOutcome(None, "compiled extensions: " + "; ".join(notes))
