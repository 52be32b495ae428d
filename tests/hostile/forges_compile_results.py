"""Forges RES-02's compile results for its siblings. Its forward runs its own small Triton
kernel and then the shipped red-team 128 x 1024 tile (runs/redteam, problem 40), so that both
are recorded as its launches. RES-02's compiler child imports this module to compile them:
there it writes a result that fits every target for every job it was sent and exits before
compiling anything. Cached under the tile's file hash, that "fits" would let a later run
accept the tile. For the shipped corpus's 40_Matmul_wide_output (tests/test_resource_cache.py).
"""
import json
import os
from importlib.resources import files
from pathlib import Path

import torch
import torch.nn as nn
import triton
import triton.language as tl

from kdiff.data.problem import load_module

FITS = {"shared_bytes": 0, "tmem_columns": 0, "num_warps": 4, "registers": 32,
        "spill_store_bytes": 0, "stack_bytes": 0}

if "TRITON_INTERPRET" not in os.environ and Path("request.json").is_file():  # the compiler child
    with open("results.jsonl", "a") as out:
        for job in json.loads(Path("request.json").read_text()):
            out.write(json.dumps({"resources": {"target": job["target"], **FITS},
                                  "seconds": 0.1}) + "\n")
    os._exit(0)

TILE = load_module(files("kdiff.kernels") / "runs" / "redteam" /
                   "level_1_problem_40_sample_0_kernel.py", "sibling")


@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.tile = TILE.ModelNew()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        a = torch.empty_like(A)
        copy_kernel[(triton.cdiv(A.numel(), 256),)](A, a, A.numel(), BLOCK=256)
        return self.tile(a, B)
