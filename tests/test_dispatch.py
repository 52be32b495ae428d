"""kdiff's dispatch modes (kdiff.data.dispatch): a process's first use imports no compiler."""
from __future__ import annotations

import subprocess
import sys

import pytest

PROGRAMS = {
    "provenance trace": "from kdiff.sandbox.provenance import traced_ops\n"
                        "traced_ops(lambda: torch.ones(2) + 1)\n",
    "oracle tracer": "from kdiff.numerics.oracle import MagnitudeTracer\n"
                     "with MagnitudeTracer():\n"
                     "    (torch.ones(2, dtype=torch.float64) + 1).sum()\n",
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_the_first_use_in_a_process_imports_no_compiler(name: str):
    """torch wraps a dispatch mode's __torch_dispatch__ in dynamo's `disable`, whose first
    call imports torch._dynamo and torch._inductor: seconds of each judge's first oracle and
    each worker's first recorded call."""
    program = ("import sys, torch\n" + PROGRAMS[name]
               + "print('torch._dynamo' in sys.modules, 'torch._inductor' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False"], out
