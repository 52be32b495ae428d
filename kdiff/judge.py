"""Judging one case: the native check and the gates, each in the case's own worker process."""
from __future__ import annotations

import math
import time
from typing import Any, Callable

import pluggy
import torch

from kdiff.gates.base import GateContext
from kdiff.gates.registry import select
from kdiff.model import Case, GateResult, NativeVerdict, Status, Verdict
from kdiff.problem import LoadError, load_problem
from kdiff.runconfig import RunConfig
from kdiff.sandbox import CandidateFailure, CandidateLoadError, CandidateProcess
from kdiff.seeding import fp32_means_fp32, one_thread


class UnusableOutput(CandidateFailure):
    """A successful reply of the candidate's worker that the judge cannot read: the
    candidate's failure, not kdiff's error (which would leave the verdict open)."""

    signature = "unusable_output"


def _tensors(*kinds: type) -> Callable[[Any], bool]:
    return lambda x: isinstance(x, torch.Tensor) or isinstance(x, kinds)


def _list_of(ok: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda x: isinstance(x, list) and all(ok(v) for v in x)


# What each field of a worker's reply must hold, wherever the judge reads it: `call` answers
# outputs, aliases, seconds (inputs_after on request); `native` outputs per trial,
# failed_trial, exception; `memory` bytes; `launches` a list.
REPLY_FIELDS: dict[str, Callable[[Any], bool]] = {
    "outputs": _list_of(lambda o: isinstance(o, torch.Tensor) or _list_of(_tensors())(o)),
    "inputs_after": _list_of(_tensors(type(None))),
    "aliases": _list_of(lambda a: isinstance(a, str)),
    "seconds": lambda x: type(x) in (int, float) and math.isfinite(x) and x >= 0,
    "bytes": lambda x: type(x) is int,
    "failed_trial": lambda x: x is None or type(x) is int,
    "exception": lambda x: x is None or isinstance(x, str),
    "launches": lambda x: isinstance(x, list),
}


def unusable_tensor(t: torch.Tensor) -> str | None:
    """Why kdiff cannot judge `t` as an output, or None: it must be a dense, strided,
    unquantized tensor in host memory, as every comparison and the oracle expect."""
    if t.layout is not torch.strided:
        return f"layout {t.layout}"
    if t.is_quantized:
        return f"a quantized tensor ({t.dtype})"
    if t.is_nested:
        return "a nested tensor"
    if t.device.type != "cpu":
        return f"a tensor on device {t.device.type}"
    return None


def _walk(value: Any, where: str) -> None:
    if isinstance(value, torch.Tensor):
        why = unusable_tensor(value)
        if why is not None:
            raise UnusableOutput(f"{where} is {why}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _walk(v, f"{where}[{i}]")
    elif isinstance(value, dict):
        for k, v in value.items():
            _walk(v, f"{where}.{k}")


class CheckedReply(dict):
    """A reply whose missing fields are the candidate's failure when the judge reads them."""

    cmd = ""

    def __missing__(self, key: str) -> Any:
        raise UnusableOutput(f"the reply to `{self.cmd}` has no `{key}`")


def checked_reply(cmd: str, reply: dict[str, Any]) -> CheckedReply:
    """`reply` as the judge may read it: every field it holds of the type the judge expects
    (REPLY_FIELDS), every tensor in it dense and on the host; else UnusableOutput."""
    for key, ok in REPLY_FIELDS.items():
        if key in reply and not ok(reply[key]):
            raise UnusableOutput(f"the reply to `{cmd}` holds an unusable `{key}` "
                                 f"({type(reply[key]).__name__})")
    for key, value in reply.items():
        _walk(value, key)
    checked = CheckedReply(reply)
    checked.cmd = cmd
    return checked


class CheckedCandidate(CandidateProcess):
    """The candidate's worker, each of its replies checked before any gate reads it."""

    def request(self, cmd: str, timeout: float | None = None, **payload: Any) -> CheckedReply:
        return checked_reply(cmd, super().request(cmd, timeout, **payload))


def native_preset(pm: pluggy.PluginManager, config: RunConfig) -> str:
    presets = pm.hook.kdiff_native_presets(bench=config.bench) or []
    if config.native is None:
        return pm.hook.kdiff_default_preset(bench=config.bench, config=config) or presets[0]
    if config.native not in presets:
        raise KeyError(f"unknown native preset '{config.native}' for {config.bench}; "
                       f"known: {', '.join(presets)}")
    return config.native


class JudgingInterrupted(KeyboardInterrupt):
    """Ctrl-C during the gates. `verdict` holds the gates judged so far and the others as
    errors, "not run": a failure already found still rejects; otherwise the verdict is open."""

    def __init__(self, verdict: Verdict, judged: int) -> None:
        super().__init__()
        self.verdict, self.judged = verdict, judged


# Called after each gate with the verdict so far (the gates not yet judged as errors, "not
# run"), the gate's result and how many gates are judged: `kdiff verify` prints progress and
# rewrites its reports there.
GateCallback = Callable[[Verdict, GateResult, int], None]


def _so_far(case: Case, native: NativeVerdict, results: dict[str, GateResult], gates: list,
            ctx: GateContext, why: str) -> Verdict:
    """The verdict of the gates judged so far; the others are errors that say why not."""
    full = dict(results)
    for gate in gates:
        full.setdefault(gate.id, GateResult(gate.id, Status.ERROR, detail=f"not run: {why}"))
    return Verdict(case, native, full, scaled_sizes=ctx.scaled_sizes)


def judge_case(case: Case, config: RunConfig, pm: pluggy.PluginManager,
               preset: str | None = None, on_gate: GateCallback | None = None) -> Verdict:
    fp32_means_fp32()
    one_thread()
    preset = preset or native_preset(pm, config)
    gates = select(config.gates)
    if case.discovery_error:
        return Verdict(case, NativeVerdict(None, preset, reason=case.discovery_error), {},
                       error=case.discovery_error)
    try:
        problem = load_problem(case.problem)
    except LoadError as exc:
        return Verdict(case, NativeVerdict(None, preset, reason=str(exc)), {}, error=str(exc))
    entry = pm.hook.kdiff_entry_points(bench=config.bench, case=case) or ("ModelNew",)
    with CheckedCandidate(case.problem, case.candidate, config.device, tuple(entry),
                          config.limits) as candidate:
        ctx = GateContext(problem, candidate, config.gate_options)
        start = time.perf_counter()
        try:
            native = pm.hook.kdiff_native_check(bench=config.bench, case=case, ctx=ctx,
                                                preset=preset)
        except CandidateLoadError as exc:
            # The harness records a kernel that does not import as not compiled: a reject.
            native = NativeVerdict(False, preset, reason=exc.detail)
            return Verdict(case, native, {}, error=exc.detail, error_kind="candidate")
        except CandidateFailure as exc:
            native = NativeVerdict(False, preset, reason=f"{exc.signature}: {exc.detail}")
        native.recorded = case.recorded_accept
        native.seconds = time.perf_counter() - start
        results: dict[str, GateResult] = {}
        try:
            for gate in gates:
                results[gate.id] = gate.run(ctx)
                if on_gate is not None:
                    on_gate(_so_far(case, native, results, gates, ctx, "not yet judged"),
                            results[gate.id], len(results))
        except KeyboardInterrupt:
            raise JudgingInterrupted(_so_far(case, native, results, gates, ctx,
                                             "the judging was interrupted"),
                                     len(results)) from None
    return Verdict(case, native, results, scaled_sizes=ctx.scaled_sizes)
