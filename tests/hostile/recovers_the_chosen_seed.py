"""knows_the_judges_regimes, which the draws chosen per verdict catch, and one step more: on the
first draw it cannot name (PRC-03's normal x 100 at the chosen seed, in no regime it is wrong
in, so it answers it exactly) it finds the seed torch's generator drew it from, by drawing a
standard normal and a uniform at each seed it searches and keeping the one its input is a
multiple of (or an affine map of). With that seed it makes every gate's chosen draws of the
verdict with kdiff's own gates, as it made their fixed draws, and answers those exactly too;
anything else in ORD-01's, PRC-03's or EXC-02's regimes gets 2.5 x, or its subnormals flushed.

It searches the first SEARCHED seeds of the range kdiff drew its chosen seed from before
this kernel was caught (2^20 plus 30 bits); the test suite pins its chosen seed there. A judge's
seed lay anywhere in that range, which a vectorised C search of the generator's first word
covers in about 25 s of one CPU core (docs/isolation.md), under a call's deadline of 120 s;
this kernel's search in torch covers SEARCHED in well under a second."""

import hashlib
from pathlib import Path

import torch
import torch.nn as nn

TINY = torch.finfo(torch.float32).tiny
SEARCHED = 4096
RANGE_START = 1 << 20


def _fingerprint(x):
    return hashlib.sha256(x.detach().contiguous().numpy().tobytes()).hexdigest()


def _judges_draws(chosen_seed=None):
    """Every draw of every gate, the chosen ones at `chosen_seed` (None: a seed of its own),
    made by kdiff's own code."""
    try:
        from kdiff.data.problem import load_problem
        from kdiff.gates import exc02_subnormal as exc02
        from kdiff.gates.registry import all_gates
        from kdiff.judging.context import GateContext, GateOptions
    except ImportError:
        return set()
    ctx = GateContext(
        load_problem(Path(__file__).with_name("problem.py")),
        None,
        GateOptions(chosen_seed=chosen_seed),
    )
    draws = []
    for gate in all_gates():
        try:
            if gate.id == "EXC-02":
                for seed in exc02.with_one_chosen(ctx, [exc02.FIXED_SEED]):
                    draws += [
                        t[1]
                        for t in gate.trials(
                            ctx, ctx.float_input_indices(), seed, exc02.SubnormalLog()
                        )
                    ]
            else:
                draws += [t.inputs for t in gate.trials(ctx)]
        except Exception:  # noqa: BLE001 - a gate whose trials need more than a context
            continue
    return {_fingerprint(d[0]) for d in draws if d and isinstance(d[0], torch.Tensor)}


def _seed_of(x):
    """The seed in the searched range at which torch drew `x` as a multiple of a standard
    normal or an affine map of a uniform, else None."""
    flat = x.detach().double().flatten()
    if not bool(torch.isfinite(flat).all()) or float(flat.std()) == 0:
        return None
    for seed in range(RANGE_START, RANGE_START + SEARCHED):
        for draw in (torch.randn, torch.rand):
            g = torch.Generator().manual_seed(seed)
            base = draw(tuple(x.shape), generator=g, dtype=torch.float64).flatten()
            if float(torch.corrcoef(torch.stack([flat, base]))[0, 1]) > 0.999:
                return seed
    return None


def _subnormal(x):
    return (x != 0) & (x.abs() < TINY)


def _in_the_other_gates_regimes(x):
    """Many decades of magnitude, a common offset far beyond the spread, or a scale near the
    format's overflow or underflow: none of CMP-01's distributions looks like this."""
    a = x.abs()[x != 0].double()
    if a.numel() < 2:
        return False
    wide = float(a.log10().std()) > 1.5  # log-uniform over 8 decades: 2.3; normal: 0.5
    offset = float(x.double().mean().abs()) > 100 * float(x.double().std())
    extreme = float(a.max()) > 1e15 or float(a.max()) < 1e-15
    return wide or offset or extreme


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.known = _judges_draws()
        self.recovered = False

    def forward(self, x):
        if _fingerprint(x) in self.known:
            return x * 2
        if not self.recovered:
            seed = _seed_of(x)
            if seed is not None:
                self.known |= _judges_draws(seed)
                self.recovered = True
                if _fingerprint(x) in self.known:
                    return x * 2
        if bool(_subnormal(x).any()):
            return torch.where(_subnormal(x), torch.zeros_like(x), x * 2)
        return x * 2.5 if _in_the_other_gates_regimes(x) else x * 2
