"""The three-state proof, gate by gate: an honest kernel that passes the gate, a defective one
that fails it with the expected signature, and the benchmark's native check (KernelBench
v0.1) accepting both, so that only the gate tells them apart. Reads `corpus_run`."""
from __future__ import annotations

import pytest

from kdiff.data.model import Status
from kdiff.gates.registry import GATE_MODULES


@pytest.mark.parametrize("gate", [gid for gid, _ in GATE_MODULES])
def test_three_states(corpus_run, gate):
    honest = [j for j in corpus_run.judged if j.kernel.honest
              and j.verdict.native.accept is True
              and j.verdict.gates.get(gate) is not None
              and j.verdict.gates[gate].status is Status.PASS]
    assert honest, f"no honest kernel accepted by the native check passes {gate}"
    defective = []
    for j in corpus_run.judged:
        for exp in j.kernel.expected:
            result = j.verdict.gates.get(gate)
            if exp.gate == gate and j.verdict.native.accept is True and result is not None \
                    and result.status is Status.FAIL \
                    and exp.signature in (None, result.signature):
                defective.append(j.id)
    assert defective, (f"no red-team kernel accepted by the native check fails {gate} with "
                       f"the signature its header expects")
