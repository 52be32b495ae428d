"""The candidate's process. It imports the candidate (and a copy of the reference, so that
the native check sees the allocator history the benchmark's own harness would), builds model
instances, and calls them on inputs the judge sends.

Nothing here decides a verdict: outputs go back to the judge, which holds the oracle and
does every comparison. A candidate that patches this module, torch, or builtins can only
change what it sends back about itself.

Run as `python -m kdiff.worker READ_FD WRITE_FD`.
"""
from __future__ import annotations

import gc
import os
import sys
import time
import traceback
from dataclasses import asdict
from typing import Any

import torch

from kdiff import protocol
from kdiff.problem import LoadError, load_candidate_class, load_problem
from kdiff.seeding import set_seed
from kdiff.triton_launches import LaunchRecorder
from kdiff.worker_probes import AllocationPoison, churn_allocator, live_bytes

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
          "float64": torch.float64}


def as_output_list(out: Any) -> list[torch.Tensor]:
    """A model may return a tensor, a tuple/list of tensors, or Python numbers."""
    if isinstance(out, (tuple, list)):
        items = list(out)
    else:
        items = [out]
    result = []
    for item in items:
        if isinstance(item, torch.Tensor):
            result.append(item)
        elif isinstance(item, (int, float, bool)):
            result.append(torch.tensor(item))
        else:
            raise TypeError(f"model returned a {type(item).__name__}, not a tensor")
    return result


def _storage_span(t: torch.Tensor) -> tuple[int, int]:
    st = t.untyped_storage()
    return st.data_ptr(), st.data_ptr() + st.nbytes()


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1] and a[1] > a[0] and b[1] > b[0]


class Worker:
    def __init__(self) -> None:
        self.device = "cpu"
        self.problem = None
        self.candidate_cls: type | None = None
        self.instances: dict[str, torch.nn.Module] = {}
        self.kept_outputs: list[torch.Tensor] = []  # outputs of earlier calls, kept alive
        # Input sets kept across calls by name (`call` with store_inputs_as), so that a gate
        # can overwrite one in place and call again on the same tensors (CMP-02).
        self.stored_inputs: dict[str, list[Any]] = {}
        self.original_constants: dict[str, Any] | None = None
        self.recorder = LaunchRecorder()

    # -- commands -------------------------------------------------------------------------
    def cmd_init(self, msg: dict) -> dict:
        self.device = msg["device"]
        self.recorder.install()
        self.problem = load_problem(msg["problem"])
        self.candidate_cls = load_candidate_class(msg["candidate"], tuple(msg["entry_points"]))
        # Everything imported so far (torch, Triton, the modules) moves to the collector's
        # permanent generation: collections and the live-memory walk (`memory`) then visit
        # only objects made by calls, 0.4 s less per `memory` request.
        gc.collect()
        gc.freeze()
        return {}

    def cmd_build(self, msg: dict) -> dict:
        constants = msg.get("constants") or {}
        if self.original_constants is None:
            self.original_constants = self.problem.constants()
        # Constants a build does not name are the problem's own: {} restores them.
        self.problem.set_sizes({**self.original_constants, **constants})
        cls = self.candidate_cls if msg["role"] == "candidate" else self.problem.Model
        init_inputs = [x.to(self.device) if isinstance(x, torch.Tensor) else x
                       for x in msg["init_inputs"]]
        with torch.no_grad():
            set_seed(msg["seed"])
            instance = cls(*init_inputs)
            instance = instance.to(device=self.device, dtype=DTYPES[msg["dtype"]])
        self.instances[msg["key"]] = instance
        return {}

    def cmd_call(self, msg: dict) -> dict:
        model = self.instances[msg["key"]]
        if msg.get("use_stored_inputs"):
            inputs = self.stored_inputs[msg["use_stored_inputs"]]
        else:
            inputs = [x.to(self.device) if isinstance(x, torch.Tensor) else x
                      for x in msg["inputs"]]
        if msg.get("store_inputs_as"):
            self.stored_inputs[msg["store_inputs_as"]] = inputs
        if msg.get("churn"):
            churn_allocator(self.device, msg.get("churn_seed", 0))
        reference_out = None
        if msg.get("reference_first"):
            # Run the reference first, as the benchmark's harness does, then drop its output
            # so that the candidate allocates into the memory it just freed.
            with torch.no_grad():
                reference_out = self.instances[msg["reference_first"]](*inputs)
            if not msg.get("hold_reference"):
                reference_out = None
        poison = AllocationPoison(self.device) if msg.get("poison") else None
        cotangents = msg.get("cotangents")  # backward problems: gradients are outputs too
        if cotangents is not None:
            inputs = [x.detach().requires_grad_() if _is_float(x) else x for x in inputs]
        start = time.perf_counter()
        if poison:
            poison.arm()
        try:
            with torch.set_grad_enabled(cotangents is not None):
                if msg.get("stack") == "benchmark":
                    out = benchmark_named_call(model, inputs)
                else:
                    out = neutral_call(model, inputs)
            outputs = as_output_list(out)
            if cotangents is not None:
                outputs = [o.detach() for o in outputs] + input_gradients(outputs, inputs,
                                                                         cotangents)
            if self.device == "cuda":
                torch.cuda.synchronize()
        finally:
            if poison:
                poison.disarm()
        seconds = time.perf_counter() - start
        reply: dict[str, Any] = {"seconds": seconds, "aliases": self._aliases(outputs, inputs)}
        if msg.get("keep"):
            self.kept_outputs.extend(outputs)
        if msg.get("return_inputs"):
            reply["inputs_after"] = [x.detach().cpu() if isinstance(x, torch.Tensor) else None
                                     for x in inputs]
        reply["outputs"] = [o.detach().cpu() for o in outputs]
        del reference_out
        return reply

    def _aliases(self, outputs: list[torch.Tensor], inputs: list[Any]) -> list[str]:
        """Every storage an output shares with an input, another output, or an output kept
        from an earlier call."""
        found = []
        in_spans = [(i, _storage_span(x)) for i, x in enumerate(inputs)
                    if isinstance(x, torch.Tensor)]
        out_spans = [_storage_span(o) for o in outputs]
        kept_spans = [_storage_span(k) for k in self.kept_outputs]
        for j, span in enumerate(out_spans):
            for i, ispan in in_spans:
                if _overlaps(span, ispan):
                    found.append(f"output {j} shares storage with input {i}")
            for k in range(j):
                if _overlaps(span, out_spans[k]):
                    found.append(f"output {j} shares storage with output {k}")
            if any(_overlaps(span, ks) for ks in kept_spans):
                found.append(f"output {j} shares storage with an output of an earlier call")
        return found

    def cmd_native(self, msg: dict) -> dict:
        """The benchmark's correctness loop: per trial, the reference then the candidate on
        the same inputs, models built once. Comparison happens in the judge."""
        return run_and_check_correctness(self.instances[msg["reference"]],
                                         self.instances[msg["candidate"]],
                                         msg["trials"], self.device)

    def cmd_memory(self, msg: dict) -> dict:
        if self.device == "cuda":
            gc.collect()
            torch.cuda.synchronize()
            return {"bytes": int(torch.cuda.memory_allocated())}
        return {"bytes": live_bytes(exclude=self.kept_outputs)}

    def cmd_launches(self, msg: dict) -> dict:
        """The Triton launches recorded since the last `clear` (the judge has them compiled
        for other targets: CandidateProcess.compile_launches)."""
        if msg.get("clear"):
            self.recorder.clear()
        return {"launches": [{"launch": asdict(launch)}
                             for launch in self.recorder.launches.values()],
                "dropped": self.recorder.dropped}

    def cmd_overwrite_stored(self, msg: dict) -> dict:
        """Write new values into a stored input set in place (same tensors, same storage);
        `values` holds one entry per input, None where an input keeps its values."""
        for x, v in zip(self.stored_inputs[msg["name"]], msg["values"]):
            if v is not None:
                with torch.no_grad():
                    x.copy_(v)
        return {}

    def cmd_forget(self, msg: dict) -> dict:
        self.kept_outputs.clear()
        self.stored_inputs.clear()
        gc.collect()
        return {}


def _is_float(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and x.is_floating_point()


def input_gradients(outputs: list[torch.Tensor], inputs: list[Any],
                    cotangents: list[torch.Tensor]) -> list[torch.Tensor]:
    """The VJP of the outputs against every floating input (zeros where unused)."""
    wrt = [x for x in inputs if _is_float(x)]
    cots = [c.to(o.device, o.dtype) for c, o in zip(cotangents, outputs)]
    grads = torch.autograd.grad(outputs, wrt, cots, allow_unused=True)
    return [torch.zeros_like(x) if g is None else g.detach() for g, x in zip(grads, wrt)]


def neutral_call(model: torch.nn.Module, inputs: list[Any]) -> Any:
    """Calls from gates come through here: a call stack with no benchmark names in it."""
    return model(*inputs)


def benchmark_named_call(model: torch.nn.Module, inputs: list[Any]) -> Any:
    """A call from a frame named as the benchmark's correctness loop, so that a gate can
    tell a candidate that sniffs its call stack from one that is simply wrong."""
    def run_and_check_correctness() -> Any:
        return model(*inputs)
    return run_and_check_correctness()


def run_and_check_correctness(model: torch.nn.Module, model_new: torch.nn.Module,
                              trials: list[list[Any]], device: str) -> dict:
    """Named as the benchmark's own function is, so that a candidate which sniffs its call
    stack behaves here as it would under the benchmark."""
    outputs: list[Any] = []
    with torch.no_grad():
        for trial, inputs in enumerate(trials):
            inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]
            output = model(*inputs)
            if device == "cuda":
                torch.cuda.synchronize()
            try:
                output_new = model_new(*inputs)
                if device == "cuda":
                    torch.cuda.synchronize()
                # A copy even on the CPU, where .cpu() is the tensor itself: upstream compares
                # each trial before the next, so a candidate that reuses its output buffer
                # must not overwrite the trials already run.
                outputs.append([o.detach().to("cpu", copy=True)
                                for o in as_output_list(output_new)])
            except Exception as exc:  # noqa: BLE001 - the candidate's exception is the verdict
                return {"outputs": outputs, "failed_trial": trial,
                        "exception": f"{type(exc).__name__}: {str(exc)[:500]}"}
            del output
    return {"outputs": outputs, "failed_trial": None, "exception": None}


def main() -> None:
    read_fd, write_fd = int(sys.argv[1]), int(sys.argv[2])
    worker = Worker()
    while True:
        try:
            msg = protocol.read_message(read_fd, None, trusted=True)
        except protocol.ChannelClosed:
            return
        if msg["cmd"] == "exit":
            return
        try:
            reply = getattr(worker, "cmd_" + msg["cmd"])(msg)
            reply["ok"] = True
        except LoadError as exc:
            reply = {"ok": False, "kind": "load", "error": str(exc)}
        except BaseException as exc:  # noqa: BLE001 - report, keep serving
            tb = traceback.format_exc(limit=6)
            reply = {"ok": False, "kind": "exception",
                     "error": f"{type(exc).__name__}: {str(exc).strip()[:500]}",
                     "traceback": tb[-3000:]}
        protocol.write_all(write_fd, protocol.encode(reply))


if __name__ == "__main__":
    main()
