"""Fixtures shared across test files."""
from __future__ import annotations

import os
import pickle
import sys

import pytest

# One seed for the draws chosen per verdict (GateContext.chosen_seed), the suite's own: its
# verdicts are the same on every run, so a failure is one the test names again. Set
# KDIFF_CHOSEN_SEED beforehand to judge at another (docs/false-rejects.md: scanning seeds).
os.environ.setdefault("KDIFF_CHOSEN_SEED", str((1 << 20) + 1206))


@pytest.fixture(autouse=True)
def _torch_seeded():
    """torch's global generator at one seed before each test: the tensors a test draws, and
    so its verdicts, are the same on every run, whatever ran before it in its xdist worker."""
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(0)


def _judge_corpus():
    from kdiff.commands.calibrate import judge_corpus
    from kdiff.commands.executor import default_jobs
    # KDIFF_TEST_DEVICE=cuda runs the same gate tests on a GPU (benchmarks/gpu_session.sh).
    device = os.environ.get("KDIFF_TEST_DEVICE", "cpu")
    return judge_corpus(device, jobs=int(os.environ.get("KDIFF_TEST_JOBS", 0))
                        or default_jobs(device))


@pytest.fixture(scope="session")
def corpus_run(tmp_path_factory):
    """The shipped corpus (red team, controls, and every problem's reference as its own
    candidate) judged once through all twelve gates on the CPU: the expensive run that the
    calibration and three-state tests read. Under pytest-xdist the first worker to need it
    judges it and the others read its result."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return _judge_corpus()
    from filelock import FileLock
    shared = tmp_path_factory.getbasetemp().parent / "corpus_run.pickle"
    with FileLock(f"{shared}.lock"):
        if shared.is_file():
            return pickle.loads(shared.read_bytes())
        run = _judge_corpus()
        shared.write_bytes(pickle.dumps(run))
        return run
