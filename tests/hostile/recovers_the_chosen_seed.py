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

import importlib.util
from pathlib import Path

import torch

# the kernel it goes a step beyond, beside it (a candidate's folder is not on its import path)
_spec = importlib.util.spec_from_file_location(
    "knows_the_judges_regimes", Path(__file__).with_name("knows_the_judges_regimes.py"))
_regimes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_regimes)
_fingerprint, _judges_draws = _regimes._fingerprint, _regimes._judges_draws

SEARCHED = 4096
RANGE_START = 1 << 20


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


class ModelNew(_regimes.ModelNew):
    def __init__(self):
        super().__init__()
        self.recovered = False

    def forward(self, x):
        if not self.recovered and _fingerprint(x) not in self.known:
            seed = _seed_of(x)
            if seed is not None:
                self.known |= _judges_draws(seed)
                self.recovered = True
        return super().forward(x)
