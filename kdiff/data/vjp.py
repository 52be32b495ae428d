"""The VJP a backward problem (KDIFF_BACKWARD) is judged on, one definition for the judge's
reference, the float64 oracle and the candidate's worker."""
from __future__ import annotations

import threading
from typing import Any, Sequence

import torch
from torch.utils._python_dispatch import TorchDispatchMode

# How long an interrupted wait gives the abandoned backward to reach its next operation and
# end, before the interrupt goes on without it (the thread is a daemon: it ends with the judge).
ABANDON_WAIT_S = 5.0


def differentiable(args: list[Any], positions: Sequence[int]) -> list[Any]:
    """`args` with those at `positions` (kdiff.data.differentiated) made leaves that require
    grad; the others are passed as they are: a candidate is asked no gradient for them."""
    chosen = set(positions)
    return [a.detach().requires_grad_() if i in chosen else a for i, a in enumerate(args)]


def input_gradients(outputs: list[Any], wrt: list[torch.Tensor],
                    cotangents: list[torch.Tensor]) -> list[torch.Tensor]:
    """The gradients of `outputs` along `cotangents` (one per output) against `wrt`, zeros
    where unused. Only outputs autograd can differentiate take part: an integer output
    (indices, counts) has no gradient and is judged as an output alone; with none the
    gradients are zeros."""
    pairs = [(o, c.to(o.device, o.dtype)) for o, c in zip(outputs, cotangents)
             if isinstance(o, torch.Tensor) and o.requires_grad]
    grads = (torch.autograd.grad([o for o, _ in pairs], wrt, [c for _, c in pairs],
                                 allow_unused=True) if pairs and wrt else [None] * len(wrt))
    return [torch.zeros_like(x) if g is None else g for g, x in zip(grads, wrt)]


class BackwardAbandoned(Exception):
    """Raised by an abandoned trace's next operation (input_gradients_interruptibly)."""


def input_gradients_interruptibly(outputs: list[Any], wrt: list[torch.Tensor],
                                  cotangents: list[torch.Tensor],
                                  mode: TorchDispatchMode) -> list[torch.Tensor]:
    """input_gradients under the dispatch mode `mode`, on a thread of its own while this one
    waits in Python. Autograd runs a CUDA graph's backward on its device thread, and the
    thread that asked for it waits in C++, where no signal handler runs: a judge minutes into
    a traced backward (a sequential recurrence at a held-out size) could neither stop nor
    report on a budget's SIGINT. Interrupted, the wait sets `mode.abandoned`, which the mode
    reads at each operation (raising BackwardAbandoned), and the interrupt goes on."""
    done: dict[str, Any] = {}
    # An event, not Thread.join: a join that an interrupt cuts short can leave the thread
    # marked ended while it runs, and the wait for the abandoned backward would not wait.
    ended = threading.Event()

    def backward() -> None:
        try:
            with mode:  # dispatch modes are per thread: the backward's is entered again here
                done["grads"] = input_gradients(outputs, wrt, cotangents)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the waiting thread
            done["error"] = exc
        finally:
            ended.set()

    threading.Thread(target=backward, name="kdiff-oracle-backward", daemon=True).start()
    try:
        while not ended.wait(0.2):
            pass
    except BaseException:
        mode.abandoned = True
        ended.wait(ABANDON_WAIT_S)
        raise
    if "error" in done:
        raise done["error"]
    return done["grads"]
