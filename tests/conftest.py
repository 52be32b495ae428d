"""Fixtures shared across test files."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def corpus_run():
    """The shipped corpus (red team, controls, and every problem's reference as its own
    candidate) judged once through all twelve gates on the CPU: the expensive run that the
    calibration and three-state tests read."""
    import os

    from kdiff.commands.calibrate import judge_corpus
    from kdiff.commands.executor import default_jobs
    # KDIFF_TEST_DEVICE=cuda runs the same gate tests on a GPU (benchmarks/gpu_session.sh).
    device = os.environ.get("KDIFF_TEST_DEVICE", "cpu")
    return judge_corpus(device, jobs=int(os.environ.get("KDIFF_TEST_JOBS", 0))
                        or default_jobs(device))
