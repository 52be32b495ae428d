"""What makes the judge and the worker reproducible: the seeds of the generators that a
problem's get_inputs() and a model's __init__ draw from (and their states, to draw the same
again), torch's thread count, and the precision of torch's own fp32 matmuls and
convolutions."""
from __future__ import annotations

import hashlib

import torch

# torch's CPU generator is a Mersenne Twister that takes the low 32 bits of its seed: whoever
# holds a draw can find the seed it came from by trying every one (the generator's first word
# at 2^24 seeds takes 0.5 s on one CPU core, vectorised; all 2^32 about 2 minutes), and with
# it draw whatever else that seed draws. A seed of WIDE_SEEDS or more sets the generator's
# whole state (its 624 words, 19968 bits) from a hash of the seed instead: no search over
# seeds reaches it. Seeds below keep torch's own seeding (every fixed seed in kdiff's code).
WIDE_SEEDS = 1 << 32
# The Mersenne Twister's words in torch's CPU generator state (CPUGeneratorImplState: the
# initial seed, `left` and `seeded`, `next`, then the 624 words, each in 64 bits).
MT_WORDS = slice(24, 24 + 624 * 8)
# CUDA's generator (Philox) takes a 64-bit seed: a search over it is out of reach.
CUDA_SEEDS = 1 << 64


def generator(seed: int) -> torch.Generator:
    """A CPU generator at `seed` (WIDE_SEEDS: its whole state from the seed)."""
    g = torch.Generator()
    if seed < WIDE_SEEDS:
        return g.manual_seed(seed)
    g.set_state(wide_state(seed))
    return g


def wide_state(seed: int) -> torch.Tensor:
    """A fresh CPU generator's state (the next draw twists the state first) with its 624
    words drawn from blake2b of the seed and a counter."""
    state = torch.Generator().get_state()
    text = seed.to_bytes((seed.bit_length() + 7) // 8, "little")
    stream = b"".join(hashlib.blake2b(text + bytes([block]), digest_size=64).digest()
                      for block in range(624 * 4 // 64))
    words = torch.frombuffer(bytearray(stream), dtype=torch.int32).to(torch.int64)
    state[MT_WORDS].view(torch.int64).copy_(words & 0xFFFFFFFF)
    return state


def set_seed(seed: int) -> None:
    """What torch.manual_seed does for the CPU and CUDA generators (WIDE_SEEDS: the CPU one's
    whole state from the seed). torch.manual_seed also queues seeds for XPU and MTIA and
    records a stack trace for each queued call (about 3 ms a call in a deep stack; the gates
    seed hundreds of times per kernel)."""
    if seed < WIDE_SEEDS:
        torch.default_generator.manual_seed(seed)
    else:
        torch.default_generator.set_state(wide_state(seed))
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed % CUDA_SEEDS)


def random_state(device: str) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The states of the CPU generator and of `device`'s (a CUDA one), to draw again from."""
    cuda = torch.cuda.get_rng_state(torch.device(device)) if device.startswith("cuda") else None
    return torch.get_rng_state(), cuda


def set_random_state(device: str, state: tuple[torch.Tensor, torch.Tensor | None]) -> None:
    cpu, cuda = state
    torch.set_rng_state(cpu)
    if cuda is not None:
        torch.cuda.set_rng_state(cuda, torch.device(device))


def one_thread() -> None:
    """kdiff runs kernels side by side, not one kernel's operations: one intra-op thread per
    judge and per worker. With torch's default (one per core) each of N judges and N workers
    starts a full OpenMP pool whose threads spin between operations: on 2 cores, 2 judges take
    38-43 s for 10 corpus kernels against 28-33 s with one thread each (`kdiff run --problems
    19,6,8 --jobs 2`); 8 judges on 16 cores take 170 s per level-1 kernel with the
    default. A fixed count also keeps the order of the oracle's CPU reductions, hence
    its rounding, independent of --jobs."""
    torch.set_num_threads(1)


def fp32_means_fp32() -> None:
    """TF32 off for torch's matmuls and convolutions (spec: the reference runs so). The worker
    sets it too, before the candidate is imported: a candidate that calls torch's own
    convolution gets the reference's arithmetic, not cuDNN's TF32 default (with TF32 on in
    the worker alone, a candidate that is nn.ConvTranspose2d itself errs by 1e-3 relative at
    in_channels=1 and fails CMP-03). A candidate that turns TF32 on in its own code is judged for it (PRC-01)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
