"""Provenance, decided by the judge: did the candidate compute its answer with kernels of its
own, with a library's, or by running the reference?

The worker reports what ran during the candidate's calls (kdiff.sandbox.provenance); that
record is the worker's word, so the judge attributes every entry itself, from its own reading
of the candidate's files (`OwnCode`, never run):
- a Triton launch is the candidate's when it comes from one of the candidate's files (its
  own, and the modules beside it that it names) and names a function a Triton decorator
  makes a kernel there; any other (a package's Triton kernel, inductor's generated code) is
  a library's;
- a call into an extension module is the candidate's when the candidate's source builds one
  (`load_inline`, `cpp_extension`) and the module's file lies in the worker's own folder,
  where the sandbox has torch build extensions;
- an operator outside aten and prims is the candidate's when its source registers that
  namespace (TORCH_LIBRARY, torch.library); aten's and prims' are a library's;
- a device kernel (CUDA) is the candidate's when its name is one of the candidate's Triton
  kernels or one the judge reads from the extensions it built (cuobjdump's symbols);
  while Triton's autotuner benchmarks configurations, the runs of the candidate's own
  kernels and the cache-clearing fills are noted and left out of the share; any other device
  work there (a pre-hook's) counts as a library's.
A record whose claims of the candidate's own kernels the source does not back is attributed
to libraries. Counts and device times stay the worker's word: a candidate that forges them
can at most hide library work it did, which its source then still shows (the notes say when
the source launches Triton kernels the record lacks).

The reference was called when the operators it computes with, traced by the judge on the
benchmark's inputs, ran in the same order within one of the candidate's calls.

Every call is counted: the native check's and the gates' (`judge_provenance`), since a
kernel can run its own code on the benchmark's inputs alone and a library's on the rest (a
try/except fallback to torch at any other size:
tests/fixtures/provenance/falls_back_off_its_shape.py).
The gates' calls are recorded without the profiler (CUDA), so a share of device time is the
benchmark's calls' alone.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import torch

from kdiff.data.code import code_digest
from kdiff.data.digest import digest
from kdiff.data.files import UnreadableFile, with_named_siblings
from kdiff.data.provenance import KernelShare, Origin, Provenance, ProvenanceKind
from kdiff.gates.extension_resources import (
    ReadError,
    extension_objects,
    find_cuobjdump,
    read_resource_usage,
)
from kdiff.gates.res02_resources import triton_launch_sites
from kdiff.judging.context import BENCHMARK_SEED, GateContext
from kdiff.judging.oracle_cache import OracleCache
from kdiff.sandbox.kernel_source import triton_kernel_names
from kdiff.sandbox.process import CandidateFailure
from kdiff.sandbox.provenance import RecordedProvenance, traced_ops

EXTENSION_MARKERS = ("load_inline", "cpp_extension")
LIBRARY_NAMESPACES = ("aten", "prims")
# Operators that only copy or cast values: what an honest wrapper runs on the inputs the gates
# lay out or recast (CMP-03's transposed and offset layouts, PRC-01's recasts) before its own
# kernel (`.contiguous()`, `.float()`), which the benchmark's contiguous inputs at their own
# dtype never need. They compute none of the answer (the precision a cast loses is PRC-01's
# to judge), so they are not counted in the gates' calls.
MOVES_VALUES = frozenset({"aten.clone.default", "aten.copy_.default", "aten._to_copy.default"})
# Namespaces a source registers operators in: TORCH_LIBRARY(ns, m), TORCH_LIBRARY_IMPL(ns, ..),
# torch.library.Library("ns", ...), torch.library.custom_op("ns::name", ...) and define("ns::..").
_NAMESPACE = re.compile(r"TORCH_LIBRARY(?:_FRAGMENT|_IMPL)?\s*\(\s*(\w+)"
                        r"|Library\(\s*[\"'](\w+)[\"']|[\"'](\w+)::\w+")
# A C++ symbol's function name: the mangled `_Z[N...]<len><name>` or a demangled
# `[ret ]ns::name<...>(args)`.
_MANGLED_PART = re.compile(r"(\d+)")


@dataclass(frozen=True)
class OwnCode:
    """What the candidate's own code is, read by the judge from its files and its build: the
    candidate's file and the modules beside it that it names (kdiff.data.files.
    with_named_siblings: a GPU MODE submission's wrapper loads `submission.py`)."""

    files: dict[Path, frozenset[str]]  # each own file -> the Triton kernels it defines
    sources: tuple[str, ...]  # their text
    builds_extension: bool
    namespaces: frozenset[str]  # operator namespaces its source registers
    extension_kernels: frozenset[str]  # function names in the device code it built (CUDA)
    workdir: Path | None  # the worker's folder, where its extensions are built

    @classmethod
    def read(cls, candidate: Path, workdir: Path | None,
             extension_kernels: frozenset[str] = frozenset()) -> "OwnCode":
        try:
            read = with_named_siblings(candidate)
        except (OSError, UnreadableFile):
            read = []
        files, sources = {}, []
        for path, body in read:
            source = body.decode("utf-8", "replace")
            try:
                kernels = triton_kernel_names(ast.parse(source))
            except (SyntaxError, ValueError):
                kernels = frozenset()
            files[path.resolve()] = kernels
            sources.append(source)
        source = "\n".join(sources)
        namespaces = frozenset(n for match in _NAMESPACE.findall(source) for n in match if n)
        return cls(files, tuple(sources), any(m in source for m in EXTENSION_MARKERS),
                   namespaces - {"aten", "prims"}, extension_kernels,
                   workdir.resolve() if workdir else None)

    @property
    def triton_kernels(self) -> frozenset[str]:
        return frozenset().union(*self.files.values())

    def built_here(self, file: str) -> bool:
        return self.builds_extension and self.workdir is not None \
            and Path(file).resolve().is_relative_to(self.workdir)


def symbol_name(symbol: str) -> str:
    """The function's own name in a C++ symbol, mangled (`_ZN2ns6kernelEPf` -> kernel) or
    demangled (`void ns::kernel<float>(float*)` -> kernel); a plain name as it is."""
    if symbol.startswith("_Z"):
        rest = symbol[2:].lstrip("L")  # internal linkage
        nested = rest.startswith("N")
        rest, last = rest[nested:], symbol
        while m := _MANGLED_PART.match(rest):
            n = int(m.group(1))
            last, rest = rest[m.end():m.end() + n], rest[m.end() + n:]
            if not nested:  # what follows is the parameters' types
                break
        return last
    head = symbol.split("(", 1)[0]
    depth, plain = 0, []
    for ch in head:  # template arguments dropped
        depth += ch == "<"
        if depth == 0:
            plain.append(ch)
        depth -= ch == ">"
    words = "".join(plain).split()
    return words[-1].rsplit("::", 1)[-1] if words else head


def is_subsequence(needle: list[str], haystack: list[str]) -> bool:
    it = iter(haystack)
    return all(op in it for op in needle)


def attribute(record: RecordedProvenance, own: OwnCode) -> tuple[list[KernelShare], list[str]]:
    """Every entry of the record as the candidate's or a library's (module docstring), and
    the notes on claims the judge did not take."""
    kernels, notes = [], []
    for file, names in record.triton.items():
        defined = own.files.get(Path(file).resolve())
        mine = defined is not None
        for qualname, n in names.items():
            is_own = mine and qualname.rsplit(".", 1)[-1] in defined
            if mine and not is_own:
                notes.append(f"{qualname}: recorded in the candidate's file, where the judge "
                             f"finds no such Triton kernel: counted as a library's")
            source = "inductor" if "torchinductor" in file else "triton"
            kernels.append(KernelShare(qualname if mine else f"{qualname} ({Path(file).name})",
                                       Origin.OWN if is_own else Origin.LIBRARY, source, n))
    for file, names in record.extensions.items():
        is_own = own.built_here(file)
        if not is_own:
            notes.append(f"{Path(file).name}: an extension the candidate's source does not "
                         f"build in its folder: counted as a library's")
        for name, n in names.items():
            kernels.append(KernelShare(f"{Path(file).stem}.{name}",
                                       Origin.OWN if is_own else Origin.LIBRARY,
                                       "extension", n))
    for op, n in record.aten.items():
        namespace = op.split(".", 1)[0]
        library = namespace in LIBRARY_NAMESPACES
        is_own = not library and namespace in own.namespaces
        kernels.append(KernelShare(op, Origin.OWN if is_own else Origin.LIBRARY,
                                   "aten" if library else "custom op", n))
    own_device = own.triton_kernels | own.extension_kernels
    for k in record.device:
        is_own = symbol_name(k.name) in own_device
        kernels.append(KernelShare(k.name, Origin.OWN if is_own else Origin.LIBRARY, "device",
                                   k.launches, k.seconds))
    benchmarked = [k for k in record.tuning
                   if symbol_name(k.name) in own_device or is_cache_flush(k.name)]
    if benchmarked:
        notes.append(f"Triton's autotuner benchmarked configurations during the calls: "
                     f"{sum(k.launches for k in benchmarked)} device activities, "
                     f"{sum(k.seconds for k in benchmarked):.3g} s of the candidate's own "
                     f"kernels and cache-clearing fills, left out of the share (they compute "
                     f"no answer)")
    for k in record.tuning:  # anything else a benchmark ran (a pre-hook's work) is counted
        if k not in benchmarked:
            kernels.append(KernelShare(k.name, Origin.LIBRARY, "device", k.launches, k.seconds))
    return kernels, notes


def is_cache_flush(name: str) -> bool:
    """The fill with which Triton's benchmark clears the L2 cache between timed runs
    (`cache.zero_()`): it writes a constant, so no answer can come from it."""
    return "FillFunctor" in name or name.startswith("Memset")


def not_recorded() -> Provenance:
    """The provenance of a candidate none of whose calls was recorded: undecided."""
    return Provenance(None, detail="no call of the candidate was recorded")


def decide(record: RecordedProvenance, own: OwnCode, reference_ops: list[str],
           launch_sites: list[str] = ()) -> Provenance:
    """The provenance of a candidate from its worker's `record`, the judge's reading of its
    code (`own`), and the computing operators of the reference (`reference_ops`)."""
    if record.calls == 0:
        return not_recorded()
    kernels, notes = attribute(record, own)
    device = [k for k in kernels if k.seconds is not None]
    if device:  # CUDA: the share of device time
        basis = "device time"
        total = sum(k.seconds for k in device)
        library = sum(k.seconds for k in device if k.origin is Origin.LIBRARY)
    else:
        basis = "launches"
        total = sum(k.launches for k in kernels)
        library = sum(k.launches for k in kernels if k.origin is Origin.LIBRARY)
    share = library / total if total else None
    has_own = any(k.origin is Origin.OWN and k.launches for k in kernels)
    has_library = any(k.origin is Origin.LIBRARY and k.launches for k in kernels)
    reference_called = bool(reference_ops) and any(is_subsequence(reference_ops, s)
                                                   for s in record.sequences)
    recorded_triton = {q.rsplit(".", 1)[-1] for names in record.triton.values() for q in names}
    hidden = sorted(set(launch_sites) - recorded_triton)
    if hidden and not recorded_triton:
        notes.append(f"the source launches the Triton kernel(s) {', '.join(hidden)}, and none "
                     f"was recorded: hidden from the recorder, or never run")
    if reference_called:
        kind = ProvenanceKind.REFERENCE_CALL
        notes.insert(0, f"the reference's operators ran in its order: "
                        f"{' > '.join(reference_ops[:8])}")
    elif not has_own:
        kind = ProvenanceKind.LIBRARY_ONLY
        notes.insert(0, "no kernel of the candidate's own ran" if has_library
                     else "no kernel ran at all")
    elif has_library:
        kind = ProvenanceKind.MIXED
    else:
        kind = ProvenanceKind.OWN
    if record.dropped:
        notes.append(f"{record.dropped} entries beyond the record's bounds not counted")
    kernels.sort(key=lambda k: (-(k.seconds or 0.0), -k.launches, k.name))
    return Provenance(kind, kernels, share, basis, reference_called, list(record.outstanding),
                      record.calls, "; ".join(notes))


def reference_ops(ctx: GateContext) -> list[str]:
    """The reference's computing operators on the benchmark's inputs, in order, traced here
    by the judge ([] where the reference does not run). Kept beside the problem's oracle
    entries (kdiff.judging.oracle_cache) for its other candidates: a first trace in a judge
    process costs it a second (torch imports its compiler then), the default CPU run's two
    judges 2 of their 17 CPU seconds."""
    try:
        inputs = ctx.benchmark_inputs(BENCHMARK_SEED)
        path = ctx.oracle_cache.path("reference ops", digest(inputs, BENCHMARK_SEED),
                                     code_digest("kdiff.sandbox.provenance"))
        kept = OracleCache.load(path, "cpu")
        if kept is not None and isinstance(kept.get("ops"), list):
            return kept["ops"]
        model = ctx.reference()
        inputs = ctx.to_device(inputs)
        with torch.no_grad():
            ops = traced_ops(lambda: model(*inputs))
    except Exception:  # noqa: BLE001 - ReferenceFailure or any: no sequence to compare with
        return []
    OracleCache.store(path, {"ops": ops})
    return ops


def extension_kernel_names(workdir: Path) -> frozenset[str]:
    """The function names in the device code the candidate built (cuobjdump), if any."""
    objects = extension_objects(workdir)
    cuobjdump = find_cuobjdump() if objects else None
    names = set()
    for path in objects if cuobjdump else []:
        try:
            usage = read_resource_usage(path, cuobjdump)
        except ReadError:
            continue
        names |= {symbol_name(k.function) for k in (usage.kernels if usage else [])}
    return frozenset(names)


def merged(benchmark: RecordedProvenance, gates: RecordedProvenance) -> RecordedProvenance:
    """The record of the native check's calls with the gates' added: their calls, launches,
    computing operators (those that only move values left out: `MOVES_VALUES`), sequences
    and outstanding work. Device time stays the benchmark's calls' (the gates' are not
    profiled)."""
    def add(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
        return {k: a.get(k, 0) + b.get(k, 0) for k in {**a, **b}}

    def add_nested(a: dict[str, dict[str, int]], b: dict[str, dict[str, int]]
                   ) -> dict[str, dict[str, int]]:
        return {f: add(a.get(f, {}), b.get(f, {})) for f in {**a, **b}}

    aten = {op: n for op, n in gates.aten.items() if op not in MOVES_VALUES}
    return RecordedProvenance(
        calls=benchmark.calls + gates.calls,
        triton=add_nested(benchmark.triton, gates.triton),
        extensions=add_nested(benchmark.extensions, gates.extensions),
        aten=add(benchmark.aten, aten),
        sequences=benchmark.sequences + [s for s in gates.sequences
                                         if s not in benchmark.sequences],
        device=benchmark.device, tuning=benchmark.tuning,
        outstanding=benchmark.outstanding + [o for o in gates.outstanding
                                             if o not in benchmark.outstanding],
        dropped=benchmark.dropped + gates.dropped)


def read_benchmark_calls(ctx: GateContext) -> RecordedProvenance | Provenance:
    """What the candidate's calls so far (the native check's) ran, or the provenance of a
    record the judge could not read. The worker goes on recording the gates' calls: without
    the profiler after a record with calls; as before otherwise (a native check that calls
    no worker, as TritonBench's runs scripts: the gates' calls are all there is)."""
    try:
        record = RecordedProvenance.parse(ctx.candidate.provenance(recording=True,
                                                                   profiling=False))
        if record.calls == 0:
            ctx.candidate.provenance(recording=True)
    except CandidateFailure as exc:
        return Provenance(None, detail=f"no record: {exc}")
    except ValueError as exc:
        return Provenance(None, detail=f"the worker's record is unusable: {exc}")
    return record


def judge_provenance(ctx: GateContext, benchmark: RecordedProvenance | Provenance
                     ) -> Provenance:
    """The provenance of every call of the candidate: the native check's (`benchmark`, from
    `read_benchmark_calls`) and the gates' since, read now; recording stops."""
    if isinstance(benchmark, Provenance):
        return benchmark
    note = ""
    try:
        gates = RecordedProvenance.parse(ctx.candidate.provenance(recording=False))
    except (CandidateFailure, ValueError) as exc:
        gates, note = RecordedProvenance(), f"the gates' calls: no usable record ({exc})"
    record = gates if benchmark.calls == 0 else merged(benchmark, gates)
    if record.calls == 0:
        return not_recorded()
    workdir = ctx.candidate.workdir
    own = OwnCode.read(ctx.candidate.candidate, workdir,
                       extension_kernel_names(workdir) if record.device else frozenset())
    sites = [site for source in own.sources for site in triton_launch_sites(source)]
    provenance = decide(record, own, reference_ops(ctx), sites)
    if benchmark.calls and gates.calls:
        note = f"the benchmark's {benchmark.calls} calls and the gates' {gates.calls}"
    provenance.detail = "; ".join(n for n in (provenance.detail, note) if n)
    return provenance
