"""Seeding the generators that a problem's get_inputs() and a model's __init__ draw from."""
from __future__ import annotations

import torch


def set_seed(seed: int) -> None:
    """What torch.manual_seed does for the CPU and CUDA generators. torch.manual_seed also
    queues seeds for XPU and MTIA and records a stack trace for each queued call (about 3 ms a
    call in a deep stack; the gates seed hundreds of times per kernel)."""
    torch.default_generator.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)
