"""The candidate's process. It imports the candidate (and a copy of the reference, so that
the native check sees the allocator history the benchmark's own harness would), builds model
instances, and calls them on inputs the judge sends.

Nothing here decides a verdict: outputs go back to the judge, which holds the oracle and
does every comparison. A call's reply holds the outputs and the inputs as they are after the
call in one payload, in which the judge finds shared storage itself, and which outputs lie
in the storage of an earlier call's that is still alive (the last call's kept alive through
every call alike, older ones where the candidate keeps them), and how many of those earlier
outputs changed since they were handed out; on the CPU the
inputs are in the judge's memory (kdiff.sandbox.arena), which it reads after the call
instead of the reply's copies. A candidate that patches this module, torch, or builtins can
change what it sends back about itself: its outputs, aliasing, reuse of an earlier call's
storage, and (on CUDA) its inputs after the call.

Every call, the native check's and every gate's, goes through `cmd_call`: the request is
taken out of its message and its preparations done before the candidate runs, so that no
frame the candidate can walk holds what a gate asked for (churn, poison).

Run as `python -m kdiff.sandbox.worker READ_FD WRITE_FD [ARENA_FD]`.
"""

from __future__ import annotations

import gc
import hashlib
import os
import sys
import time
import traceback
import weakref
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Callable

import torch

from kdiff.data.problem import LoadError, load_candidate_class, load_problem
from kdiff.data.recast import recast_module
from kdiff.data.seeding import set_seed
from kdiff.data.trained import held, redraw_trainable
from kdiff.data.vjp import differentiable, input_gradients
from kdiff.sandbox import cuda_on_cpu, interpreter_device, protocol
from kdiff.sandbox.arena import on_arena
from kdiff.sandbox.launches import LaunchRecorder
from kdiff.sandbox.mappings import Memory, memory_of
from kdiff.sandbox.probes import (
    AllocationPoison,
    churn_allocator,
    context_broken,
    live_bytes,
)
from kdiff.sandbox.provenance import ProvenanceRecorder
from kdiff.sandbox.visibility import rewrite_command_line

# What ran while the candidate ran (its forward in neutral_call and run_and_check_correctness,
# its gradients in cmd_call): module-level, so that the call functions keep the signatures the
# benchmark's own have.
PROVENANCE = ProvenanceRecorder()

# "native": the model as its constructor made it (the problem's own precision), cast to
# nothing; the others recast the whole model (kdiff.judging.context.DTYPE_NAMES).
DTYPES = {
    "native": None,
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float64": torch.float64,
}


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


@dataclass
class CallRequest:
    """What the judge asks of one `call`, taken out of its message before the candidate runs:
    the steps before the call are done and forgotten, and nothing of the request is left in
    a frame the candidate can walk (the message the loop holds is then {"cmd": "call"})."""

    key: str
    inputs: list[Any] = field(default_factory=list)
    arena: list[dict[str, Any] | None] | None = None  # where placed inputs are (InputArena)
    use_stored_inputs: str | None = None
    store_inputs_as: str | None = None
    churn: bool = False
    churn_seed: int = 0
    reference_first: str | None = None  # the worker's reference instance, run right before
    reference_inputs: list[Any] | None = None  # what it runs on, when not the call's inputs
    poison: bool = False
    cotangents: list[torch.Tensor] | None = None  # backward problems
    differentiated: list[int] | None = None  # the inputs their gradients are judged against
    stack: str = "neutral"  # or "benchmark": frames named as the benchmark's harness
    grad: bool = False  # autograd on for a forward call (a training loop's), off as benchmarks

    @classmethod
    def take(cls, msg: dict) -> "CallRequest":
        request = cls(**{f.name: msg.pop(f.name) for f in fields(cls) if f.name in msg})
        if set(msg) != {"cmd"}:
            raise TypeError(f"unknown call options: {sorted(set(msg) - {'cmd'})}")
        return request


def to_cpu_sharing(tensors: list[Any]) -> list[Any]:
    """CPU tensors for the reply, each device storage copied once and views rebuilt on the
    copies: tensors that share storage here share it in the payload, where the judge checks
    aliasing itself (kdiff.sandbox.protocol.shared_storage)."""
    copies: dict[int, torch.UntypedStorage] = {}
    result = []
    for t in tensors:
        if not isinstance(t, torch.Tensor):
            result.append(None)
            continue
        t = t.detach()
        if t.device.type != "cpu":
            storage = t.untyped_storage()
            if storage.data_ptr() not in copies:
                copies[storage.data_ptr()] = storage.cpu()
            t = laid_out_as(t, copies[storage.data_ptr()])
        result.append(t)
    return result


class Worker:
    def __init__(self, arena_fd: int | None = None) -> None:
        self.arena_fd = arena_fd  # the judge's input arena (kdiff.sandbox.arena), CPU only
        self.device = "cpu"
        self.problem = None
        self.candidate_cls: type | None = None
        self.instances: dict[str, torch.nn.Module] = {}
        # The problem's module constants each instance was built under. A forward may read
        # them when called (`x.reshape(-1, D)`), and a later build under other constants
        # (CMP-03's sizes) sets the module's: each instance runs under its own again.
        self.constants_of: dict[str, dict[str, Any]] = {}
        # The last call's outputs, alive until the next call has run (as a harness's loop
        # variable is, by every call alike) or another command arrives.
        self.latest: list[torch.Tensor] = []
        # Every earlier call's outputs, watched (HandedOut): one still alive when a later
        # output lies in it was kept by the candidate (a ring of buffers handed out in turn,
        # each call's output not the last call's) and is one buffer handed out twice, however
        # many calls ago; one freed was the allocator's to hand out again. One alive whose
        # bytes changed was written after it was handed out (used as a later call's scratch).
        self.handed_out: list[HandedOut] = []
        # Input sets kept across calls by name (`call` with store_inputs_as), so that a gate
        # can overwrite one in place and call again on the same tensors (CMP-02).
        self.stored_inputs: dict[str, list[Any]] = {}
        self.original_constants: dict[str, Any] | None = None
        self.recorder = LaunchRecorder()

    # -- commands -------------------------------------------------------------------------
    def cmd_init(self, msg: dict) -> dict:
        self.device = msg["device"]
        fraction = msg.get("gpu_memory_fraction")
        if self.device == "cuda" and fraction and torch.cuda.is_available():
            # A device-memory bomb fails in the candidate (out of memory) instead of starving
            # the judge's oracle on the same GPU. The candidate can lift the cap in its own
            # process: it stops accidents, not a deliberate hoarder (see kdiff.sandbox.process).
            torch.cuda.set_per_process_memory_fraction(float(fraction))
        self.recorder.install()
        interpreter_device.install()
        if self.device == "cpu":
            cuda_on_cpu.install()  # before the candidate's module, which may allocate at import
        PROVENANCE.device = self.device
        PROVENANCE.recording = bool(msg.get("record_provenance", True))
        PROVENANCE.profiling = bool(msg.get("profile_provenance", True))
        PROVENANCE.install()
        self.problem = load_problem(msg["problem"])
        self.candidate_cls = load_candidate_class(msg["candidate"], tuple(msg["entry_points"]))
        # Everything imported so far (torch, Triton, the modules) moves to the collector's
        # permanent generation: collections and the live-memory walk (`memory`) then visit
        # only objects made by calls, 0.4 s less per `memory` request.
        gc.collect()
        gc.freeze()
        return {}

    def _constructed(self, msg: dict, role: str) -> tuple[torch.nn.Module, dict[str, Any]]:
        """An instance of `role`'s class as its constructor leaves it, at the message's seed
        and sizes, and those sizes."""
        constants = msg.get("constants") or {}
        if self.original_constants is None:
            self.original_constants = self.problem.constants()
        # Constants a build does not name are the problem's own: {} restores them.
        constants = {**self.original_constants, **constants}
        self.problem.set_sizes(constants)
        cls = self.candidate_cls if role == "candidate" else self.problem.Model
        init_inputs = [
            x.to(self.device) if isinstance(x, torch.Tensor) else x for x in msg["init_inputs"]
        ]
        with torch.no_grad():
            set_seed(msg["seed"])
            return cls(*init_inputs), constants

    def cmd_held(self, msg: dict) -> dict:
        """The floating tensors of a candidate built at the message's seed, as built
        (kdiff.data.trained.held), for the judge to pair with its reference's; the instance
        is not kept."""
        instance, _ = self._constructed(msg, "candidate")
        return {"held": [[t.name, t.digest, t.trainable] for t in held(instance, msg["seed"])]}

    def cmd_build(self, msg: dict) -> dict:
        instance, self.constants_of[msg["key"]] = self._constructed(msg, msg["role"])
        with torch.no_grad():
            if msg.get("trained"):
                redraw_trainable(instance, msg["seed"])
            instance = recast_module(instance, self.device, DTYPES[msg["dtype"]])
        self.instances[msg["key"]] = instance
        if msg["role"] == "candidate":
            PROVENANCE.watch(instance)
        return {}

    def _instance(self, key: str) -> torch.nn.Module:
        """The instance built as `key`, with the problem's constants set as they were then."""
        self.problem.set_sizes(self.constants_of[key])
        return self.instances[key]

    def _prepare(
        self, request: CallRequest
    ) -> tuple[torch.nn.Module, list[Any], torch.nn.Module | None]:
        """The steps before the call: the model, its inputs, allocator churn, and the
        reference run first (on the benchmark's stack, inside its frame, as its harness
        does; otherwise here, its output freed so that the candidate allocates into it)."""
        if request.use_stored_inputs:
            inputs = self.stored_inputs[request.use_stored_inputs]
        else:
            inputs = request.inputs
            if request.arena is not None and self.arena_fd is not None:
                inputs = on_arena(self.arena_fd, request.arena, inputs)
            inputs = [on_device(x, self.device) for x in inputs]
        if request.store_inputs_as:
            self.stored_inputs[request.store_inputs_as] = inputs
        if request.churn:
            churn_allocator(self.device, request.churn_seed)
        reference = self._instance(request.reference_first) if request.reference_first else None
        if reference is not None and request.stack != "benchmark":
            with torch.no_grad():
                if request.reference_inputs is None:
                    # On copies: what the reference writes into its inputs (an output buffer
                    # among them) is not the candidate's doing.
                    reference(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs])
                else:
                    reference(
                        *[
                            x.to(self.device) if isinstance(x, torch.Tensor) else x
                            for x in request.reference_inputs
                        ]
                    )
            reference = None
        return self._instance(request.key), inputs, reference

    def cmd_call(self, msg: dict) -> dict:
        interpreter_device.launch_outside_torch_compile()  # once the candidate compiles
        request = CallRequest.take(msg)
        model, sent, reference = self._prepare(request)
        cotangents, stack, grad = request.cotangents, request.stack, request.grad
        differentiated = request.differentiated or []
        poison = AllocationPoison(self.device) if request.poison else None
        del request  # nothing the gate asked for is left in a frame the candidate can walk
        inputs = sent
        if cotangents is not None:  # backward problems: gradients are outputs too
            inputs = differentiable(sent, differentiated)
        start = time.perf_counter()
        if poison:
            poison.arm()
        try:
            with torch.set_grad_enabled(cotangents is not None or grad):
                if stack == "benchmark":
                    outputs = run_and_check_correctness(reference, model, inputs, self.device)
                else:
                    outputs = neutral_call(model, inputs)
            if cotangents is not None:
                with PROVENANCE.candidate(model, call=False):
                    outputs = [o.detach() for o in outputs] + input_gradients(
                        outputs, [inputs[i] for i in differentiated], cotangents
                    )
            if self.device == "cuda":
                torch.cuda.synchronize()
        finally:
            if poison:
                poison.disarm()
        seconds = time.perf_counter() - start
        # The last call's outputs stay alive through this one (`latest`), in every call alike,
        # and earlier ones while the candidate keeps them: an output in their storage is one
        # buffer handed out twice, and one of them whose bytes changed since it was handed out
        # was written by this call or by work left running after an earlier one. Alive after
        # the call, not before: one freed during it was the allocator's to hand out again.
        self.handed_out = [h for h in self.handed_out if h.alive() is not None]
        written = sum(h.written() for h in self.handed_out)
        for h in self.handed_out:
            h.compared_once()
        # Only a strided tensor has one storage; the judge refuses the others (unusable).
        strided = [(j, o) for j, o in enumerate(outputs) if o.layout is torch.strided]
        memories = memory_of(
            [protocol.storage_span(o) for _, o in strided],
            [not o.untyped_storage().resizable() for _, o in strided],
        )
        reused = [
            j
            for (j, _), memory in zip(strided, memories)
            if any(memory.overlaps(h.memory) for h in self.handed_out)
        ]
        self.latest = outputs
        in_inputs = [
            protocol.storage_span(x)
            for x in sent
            if isinstance(x, torch.Tensor) and x.layout is torch.strided
        ]
        self.handed_out += [
            HandedOut.of(o, memory)
            for (_, o), memory in zip(strided, memories)
            if not any(protocol.spans_overlap(memory.span, s) for s in in_inputs)
        ]
        # Outputs and the inputs as they are after the call in one payload: storage they share
        # survives serialisation, and the judge finds it there.
        sent_back = to_cpu_sharing([*outputs, *sent])
        n_out = len(outputs)
        return {
            "seconds": seconds,
            "outputs": sent_back[:n_out],
            "inputs_after": sent_back[n_out:],
            "reused": reused,
            "written": written,
        }

    def cmd_memory(self, msg: dict) -> dict:
        if self.device == "cuda":
            gc.collect()
            torch.cuda.synchronize()
            return {"bytes": int(torch.cuda.memory_allocated())}
        return {"bytes": live_bytes()}

    def cmd_launches(self, msg: dict) -> dict:
        """The Triton launches recorded since the last `clear` (the judge has them compiled
        for other targets: CandidateProcess.compile_launches)."""
        if msg.get("clear"):
            self.recorder.clear()
        self.recorder.add_inductor_launches()
        return {
            "launches": [{"launch": asdict(launch)} for launch in self.recorder.recorded()],
            "dropped": self.recorder.dropped,
        }

    def cmd_provenance(self, msg: dict) -> dict:
        """What ran during the candidate's calls since the last `clear`
        (kdiff.sandbox.provenance)."""
        return {
            "provenance": PROVENANCE.reply(
                clear=bool(msg.get("clear")),
                recording=bool(msg.get("recording", True)),
                profiling=bool(msg.get("profiling", True)),
            )
        }

    def cmd_overwrite_stored(self, msg: dict) -> dict:
        """Write new values into a stored input set in place (same tensors, same storage);
        `values` holds one entry per input, None where an input keeps its values. Through a
        tensor of its own on each one's storage, as another kernel writes through its memory:
        the stored tensor's version counter stays as it was (a cache keyed by it is stale)."""
        for x, v in zip(self.stored_inputs[msg["name"]], msg["values"]):
            if v is not None:
                with torch.no_grad():
                    laid_out_as(x, x.untyped_storage()).copy_(v)
        return {}

    def cmd_forget(self, msg: dict) -> dict:
        self.stored_inputs.clear()
        gc.collect()
        return {}


def watched(storage: torch.UntypedStorage) -> Callable[[], Any]:
    """What tells whether an output's memory is still the candidate's: memory torch's
    allocator handed out to `storage` (a resizable one) lives exactly as long as the storage,
    so a weak reference to it says so and keeps nothing alive. A storage torch made on memory
    something else owns (`torch.frombuffer`, `from_numpy`, `from_dlpack`) can die while that
    memory lives on, and a fresh storage on it each call would pass a weak watch (a ring of
    bytearrays handed out in turn): such a storage is held, so that its memory cannot be
    handed out again by anyone but the candidate. It costs memory only where a candidate
    returns foreign memory, for the worker's life. An output in the call's inputs is left
    out: the payload shows that sharing (kdiff.sandbox.protocol.shared_storage), and held,
    each call's mapping of the judge's arena would stay mapped."""
    if storage.resizable():
        return weakref.ref(storage)
    return lambda: storage


def reached_span(t: torch.Tensor) -> tuple[int, int]:
    """The bytes of its storage `t` reaches, from its first element to past its last."""
    if t.numel() == 0:
        return 0, 0
    last = t.storage_offset() + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
    return t.storage_offset() * t.element_size(), (last + 1) * t.element_size()


def bytes_digest(storage: torch.UntypedStorage, span: tuple[int, int]) -> bytes:
    """A digest of the bytes `span` of `storage` (fewer where the storage shrank since).
    SHA-256: no collision a candidate could write, and the fastest such digest here (its
    instructions in the CPU: 0.56 ms per MiB, blake2b 1.1 ms)."""
    raw = torch.empty(0, dtype=torch.uint8, device=storage.device).set_(storage)
    return hashlib.sha256(raw[span[0] : span[1]].cpu().numpy()).digest()


@dataclass
class HandedOut:
    """An output the worker handed out: what tells whether its memory is still the
    candidate's (`alive`: `watched`), where that memory lies, and a digest of the bytes the
    output reached then, which no later call may change: a caller keeps `a = m(x1)` while it
    calls `m(x2)`. The bytes of memory the worker holds for its life (`foreign`) are compared
    after the next call alone, as the last call's outputs are kept through it: held, that
    memory is no evidence that the candidate keeps it, and comparing it at every call would
    cost the worker every output it ever held."""

    alive: Callable[[], Any]
    memory: Memory
    span: tuple[int, int]
    digest: bytes | None
    foreign: bool

    @classmethod
    def of(cls, output: torch.Tensor, memory: Memory) -> "HandedOut":
        storage = output.untyped_storage()
        span = reached_span(output)
        return cls(
            watched(storage), memory, span, bytes_digest(storage, span), not storage.resizable()
        )

    def written(self) -> bool:
        """Whether its bytes changed since it was handed out (asked while it is alive)."""
        storage = self.alive()
        return (
            self.digest is not None
            and storage is not None
            and bytes_digest(storage, self.span) != self.digest
        )

    def compared_once(self) -> None:
        if self.foreign:
            self.digest = None


def on_device(x: Any, device: str) -> Any:
    """`x` on `device` laid out as sent: its storage moved whole, so that a view starting inside
    it (a storage offset) or a transposed one is one there too (`.to` makes a fresh tensor)."""
    if not isinstance(x, torch.Tensor) or x.device.type == device:
        return x
    storage_bytes = torch.empty(0, dtype=torch.uint8).set_(x.untyped_storage()).to(device)
    return laid_out_as(x, storage_bytes.untyped_storage())


def laid_out_as(x: torch.Tensor, storage: torch.UntypedStorage) -> torch.Tensor:
    """A new tensor on `storage` (on its device) with `x`'s dtype, offset, shape and strides."""
    return torch.empty(0, dtype=x.dtype, device=storage.device).set_(
        storage, x.storage_offset(), x.shape, x.stride()
    )


def plain_outputs(out: Any) -> list[torch.Tensor]:
    """The call's outputs (`as_output_list`), each a plain tensor on its own memory, made
    inside the candidate's call: a tensor subclass's Python code (a lazy tensor whose values
    torch computes when first read: tests/hostile/computes_when_read.py) runs here, recorded
    as the call's work, and never after it, where the reply reads each output's memory."""
    outputs = as_output_list(out)
    for j, o in enumerate(outputs):
        if type(o) is not torch.Tensor:
            read = o.view_as(o)  # a torch function on it: where such code runs when read
            with torch._C.DisableTorchFunctionSubclass():
                outputs[j] = read.as_subclass(torch.Tensor)
    return outputs


def neutral_call(model: torch.nn.Module, inputs: list[Any]) -> list[torch.Tensor]:
    """Calls from gates come through here: a call stack with no benchmark names in it."""
    with PROVENANCE.candidate(model):
        return plain_outputs(model(*inputs))


def run_and_check_correctness(
    model: torch.nn.Module | None, model_new: torch.nn.Module, inputs: list[Any], device: str
) -> list[torch.Tensor]:
    """Named as the benchmark's own correctness loop is, and like it holding the reference's
    output while the candidate runs: a candidate that sniffs its call stack behaves here as
    under the benchmark. The native check calls through here, and so may a gate."""
    output = model(*inputs) if model is not None else None
    if output is not None and device == "cuda":
        torch.cuda.synchronize()
    with PROVENANCE.candidate(model_new):
        output_new = plain_outputs(model_new(*inputs))
    del output
    return output_new


def disguise_process() -> None:
    """Before the candidate is imported: nothing in the process's arguments (sys.argv,
    sys.orig_argv, /proc/self/cmdline) says kdiff. The command line area is rewritten in
    place to the interpreter's bare name. The environment, the one it
    started with (/proc/self/environ) included, is an allow-list already (kdiff.sandbox.workerenv);
    its folder and log have neutral names (kdiff.sandbox.process). kdiff's modules in sys.modules stay
    visible: what matters is that no gate's call differs from the native check's."""
    for name in [k for k in os.environ if k.startswith("KDIFF_")]:
        del os.environ[name]
    sys.argv = [""]
    sys.orig_argv = [sys.executable]
    rewrite_command_line([os.path.basename(sys.executable)])


def main(read_fd: int, write_fd: int, arena_fd: int | None = None) -> None:
    disguise_process()
    worker = Worker(arena_fd)
    while True:
        try:
            msg = protocol.read_message(read_fd, None, trusted=True)
        except protocol.ChannelClosed:
            return
        if msg["cmd"] == "exit":
            return
        if msg["cmd"] != "call":
            worker.latest = []
        try:
            reply = getattr(worker, "cmd_" + msg["cmd"])(msg)
            reply["ok"] = True
        except LoadError as exc:
            reply = {"ok": False, "kind": "load", "error": str(exc)}
        except BaseException as exc:  # noqa: BLE001 - report, keep serving
            tb = traceback.format_exc(limit=6)
            reply = {
                "ok": False,
                "kind": "exception",
                "error": f"{type(exc).__name__}: {str(exc).strip()[:500]}",
                "traceback": tb[-3000:],
            }
        if not reply["ok"]:
            # The judge starts a fresh worker where this one's CUDA context broke, as the
            # worker finds by using it after the error (never read from the error's text).
            reply["device_broken"] = context_broken(worker.device)
        protocol.write_all(write_fd, protocol.encode(reply))


if __name__ == "__main__":
    main(*map(int, sys.argv[1:4]))
