"""Right with autograd off, as benchmarks call it, and wrong with it on (a training loop's
forward), as `knows_autograd_is_off`, except on the one input CMP-02 calls with autograd on:
draw B, the benchmark's get_inputs() at a seed fixed in kdiff's code, which it makes first in
its worker with kdiff's own gate (its trials, with no candidate)."""

import hashlib
import sys

import torch
import torch.nn as nn


def _fingerprint(x):
    return hashlib.sha256(x.detach().contiguous().numpy().tobytes()).hexdigest()


def _judges_autograd_draws():
    try:
        from kdiff.data.problem import load_problem
        from kdiff.gates.cmp02_statelessness import Statelessness
        from kdiff.judging.context import GateContext
    except ImportError:
        return set()
    # The worker's problem module, loaded by path beside the candidate's.
    problem = next(m for name, m in list(sys.modules.items()) if name.startswith("loaded_problem_"))
    ctx = GateContext(load_problem(problem.__file__), None)
    return {
        _fingerprint(call.inputs[0])
        for call in Statelessness().trials(ctx)
        if call.call_options.get("grad")
    }


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.known = _judges_autograd_draws()

    def forward(self, x):
        if torch.is_grad_enabled() and _fingerprint(x) not in self.known:
            return x * 3
        return x * 2
