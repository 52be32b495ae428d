"""`kdiff run`: discover a bench's cases through its adapter, judge each one, tabulate the
disagreement and write the reports.

The loop over cases is `judge_all`: cases in, verdicts out as they finish. Stores (resume)
and other executors wrap or replace it without touching discovery or reporting.
"""
from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from typing import Iterable, Iterator

import pluggy

from kdiff.commands.executor import Executor, make_executor
from kdiff.commands.invocation import (
    EXIT_UNFINISHED,
    EXPLAINED_WITHOUT_VERBOSE,
    ReportOptions,
    UsageError,
    exit_status,
    open_store,
    preset_text,
    write_reports,
)
from kdiff.data.model import Case, NativeVerdict, Status, Verdict
from kdiff.data.stream import CaseStream, as_stream
from kdiff.gates.registry import GATE_IDS, select
from kdiff.judging.hookspecs import DiscoveryError
from kdiff.judging.plugins import manager
from kdiff.judging.runconfig import RunConfig
from kdiff.reports.progress import Header, Progress
from kdiff.verdicts.judge import judge_case, native_preset
from kdiff.verdicts.store import UnreadableStore, judge_resuming


def judge_one(case: Case, config: RunConfig, pm: pluggy.PluginManager, preset: str,
              resume: Verdict | None = None) -> Verdict:
    """`judge_case`, with kdiff's own failures turned into an error row so the run goes on."""
    try:
        return judge_case(case, config, pm, preset, resume=resume)
    except Exception as exc:  # noqa: BLE001 - one broken case must not end the run
        message = f"kdiff failed on this case: {type(exc).__name__}: {exc}".splitlines()[0]
        return Verdict(case, NativeVerdict(None, preset, reason=message), {}, error=message)


# CUDA's two wordings: torch's OutOfMemoryError and the driver's error in a kernel launch
OUT_OF_DEVICE_MEMORY = ("CUDA out of memory", "CUDA error: out of memory")


def ran_out_of_device_memory(verdict: Verdict) -> bool:
    """Whether the case, the native check, the candidate (a `raised` failure) or kdiff (a
    gate error) ran out of device memory while judging it."""
    texts = [verdict.error or "", verdict.native.reason or ""] + [
        g.detail for g in verdict.gates.values()
        if g.status is Status.ERROR or g.signature == "raised"]
    return any(words in text for text in texts for words in OUT_OF_DEVICE_MEMORY)


def judge_all(cases: Iterable[Case] | CaseStream, config: RunConfig, pm: pluggy.PluginManager,
              preset: str, executor: Executor | None = None) -> Iterator[Verdict]:
    """Judge each case, yielding verdicts as they finish (not necessarily in input order
    when config.jobs > 1); local processes unless another executor is given.

    Judges that share a GPU share its memory: a case that ran out of device memory beside
    the others is judged again, alone, after them, and only that verdict counts. Beside other
    judges, a candidate that raises `CUDA error: out of memory` would be rejected for memory
    its neighbours hold, and an oracle out of memory would leave the verdict open."""
    executor = executor or make_executor("local", config.jobs, config.device)
    crowded = []
    for verdict in executor.judge(cases, judge_one, config, pm, preset):
        if config.jobs > 1 and ran_out_of_device_memory(verdict):
            crowded.append(verdict.case)
        else:
            yield verdict
    if crowded:
        alone = dataclasses.replace(config, jobs=1)
        yield from make_executor("local", 1, config.device).judge(crowded, judge_one, alone, pm,
                                                                   preset)


# -- the command --------------------------------------------------------------------------
@dataclass(frozen=True)
class RunOptions:
    """What `kdiff run` does beside judging (which RunConfig says): its reports, what its
    exit status counts, how much it explains, where it judges, and the command recorded
    with the run in the store."""

    reports: ReportOptions = ReportOptions()
    fail_on: str = "violation"  # exit_status's: violation, disagreement or never
    undecided_ok: bool = False
    verbose: bool = False
    executor: str = "local"  # make_executor's: local or ray
    command: str = ""
    require_own_kernel: bool = False  # a kernel not seen running its own kernel is a violation


def discover(config: RunConfig, pm: pluggy.PluginManager) -> CaseStream:
    try:
        cases = pm.hook.kdiff_discover(bench=config.bench, config=config)
    except DiscoveryError as exc:
        raise UsageError(str(exc)) from None
    if cases is None:
        raise UsageError(f"the {config.bench} adapter does not discover cases")
    if not len(cases):
        raise UsageError(f"no {config.bench} cases match the selection")
    return as_stream(cases)


def header(config: RunConfig, pm: pluggy.PluginManager, preset: str, cases: CaseStream,
           gates: list[str]) -> Header:
    """What `kdiff run` found and how it will judge it, printed before the first kernel."""
    return (Header("kdiff run")
            .add("bench", config.bench)
            .add("root", config.root or "the shipped corpus")
            .add("runs", config.runs)
            .add("generated", config.generated)
            .add("kernels", len(cases))
            .add("native check", preset_text(pm, config.bench, preset))
            .add("device", config.device)
            .add("judges", f"{config.jobs} at once")
            .add("gates", ",".join(gates) if len(gates) < len(GATE_IDS) else "all twelve")
            .add("store", config.store))


def run(config: RunConfig, options: RunOptions) -> int:
    """Judge the bench's cases (config.bench: an installed adapter's) and report them."""
    pm = manager()
    try:
        preset = native_preset(pm, config)
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None
    except IndexError:
        raise UsageError(f"the {config.bench} adapter declares no native check") from None
    cases = discover(config, pm)
    order = {ident: i for i, ident in enumerate(cases.ids)}
    gates = [g.id for g in select(config.gates)]
    # Every verdict is stored as it lands; the same command again judges only what is missing.
    store = open_store(config.store)
    print(header(config, pm, preset, cases, gates).render(), file=sys.stderr, flush=True)
    progress = Progress(len(cases))
    cases.on_note = progress.note
    verdicts: list[Verdict] = []
    status = None
    executor = make_executor(options.executor, config.jobs, config.device)
    # The run is recorded once its every case is known: a stream's may still be in the
    # making while the first are judged.
    recorded = cases.finished
    if recorded:
        store.begin_run(cases.listed(), config, preset, gates, options.command)
    try:
        try:
            for verdict in judge_resuming(store, cases, config, preset, gates,
                                          lambda todo, cfg: judge_all(todo, cfg, pm, preset,
                                                                      executor)):
                verdicts.append(verdict)
                progress(verdict)
        except KeyboardInterrupt:
            progress.close()
            print(f"kdiff: interrupted after {len(verdicts)} of {len(cases)} kernels; "
                  "reporting those", file=sys.stderr)
            status = EXIT_UNFINISHED
        if not recorded and cases.finished:
            store.begin_run(cases.listed(), config, preset, gates, options.command)
    except UnreadableStore as exc:  # a stored verdict that does not parse
        progress.close()
        raise UsageError(str(exc)) from None
    finally:
        progress.close()
        cases.close()
        store.close()
    verdicts.sort(key=lambda v: order.get(v.case.id, len(order)))
    from kdiff.reports.terminal import explain_run, run_report
    print(run_report(verdicts, config.bench, preset, config.device))
    explained = explain_run(verdicts, options.verbose, EXPLAINED_WITHOUT_VERBOSE)
    if explained:
        print("\n" + explained)
    write_reports(options.reports, verdicts, config.bench, preset, config.device)
    if status is not None:
        return status
    return exit_status(verdicts, options.fail_on, options.undecided_ok,
                       options.require_own_kernel)
