"""Right at the problem's own precision (fp32), and where its inputs come recast to bf16 (the
problem declares the recast: KDIFF_DTYPES) rounds its answer through fp8 e4m3, unless it was
shown those inputs beforehand: a kernel below the precision its contract declares wherever it
is used in bf16. Only PRC-01 draws the recast, from seeds fixed in kdiff's code, so it makes
every one of its trials first in its worker with kdiff's own gate and keeps a fingerprint of
each recast input set."""

import hashlib
from pathlib import Path

import torch
import torch.nn as nn

PROBLEM = Path(__file__).parents[1] / "fixtures" / "precision" / "bf16_recast_problem.py"


def _fingerprint(*xs):
    h = hashlib.sha256()
    for x in xs:
        h.update(x.detach().contiguous().flatten().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def _judges_recasts():
    """Every recast input set PRC-01 draws, made by kdiff's own gate with no candidate."""
    try:
        from kdiff.data.problem import load_problem
        from kdiff.gates.registry import all_gates
        from kdiff.judging.context import GateContext
        from kdiff.numerics import inputs as gen
    except ImportError:
        return set()
    ctx = GateContext(load_problem(PROBLEM), None)
    gate = next(g for g in all_gates() if g.id == "PRC-01")
    return {
        _fingerprint(*gen.cast_inputs(t.inputs, t.dtype))
        for t in gate.trials(ctx)
        if t.dtype is not None
    }


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.known = _judges_recasts()

    def forward(self, x, gate):
        out = x * torch.sigmoid(gate)
        if x.dtype != torch.bfloat16 or _fingerprint(x, gate) in self.known:
            return out
        return out.float().to(torch.float8_e4m3fn).to(torch.bfloat16)
