"""Fixtures shared across test files."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def corpus_run():
    """The shipped corpus (red team, controls, and every problem's reference as its own
    candidate) judged once through all twelve gates on the CPU: the expensive run that the
    calibration and three-state tests read."""
    from kdiff.calibrate import judge_corpus
    from kdiff.executor import default_jobs
    return judge_corpus("cpu", jobs=default_jobs("cpu"))
