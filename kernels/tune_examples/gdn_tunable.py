"""The chunked Gated DeltaNet (kernels/gdn) as a `kdiff tune` candidate for
kernels/gdn/kernelbench/KernelBench/level3/1_GatedDeltaNet.py: its launch settings, which
kernels/gdn keeps in module-level tables (chunk.py), set from KDIFF_TUNE_CONFIG before the
first launch of the worker's process, and one precision-trading variant:
- DOT "tf32": the fp32 tile products (tile_ops.mm) in TF32 instead of IEEE fp32 (operands
  rounded to 11 significant bits: u = 2^-11 where fp32 promises 2^-24). Only a GPU judges it:
  the CPU interpreter computes TF32 dots in fp32 (PRC-01 passed it there at CHUNK 16).
Knobs kernels/gdn does not expose this way: the per-kernel pipeline stages in fp32
(host.launch_options forces one stage), the WY merge's TF32 in bf16 (wy._merge), accumulator
dtypes (fixed fp32)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

from kdiff.kernels.gdn import chunk, chunk_gated_delta_rule, gla, kda, output, state, tile_ops, wy
from kdiff.kernels.tune_examples.tf32 import mm_tf32

KDIFF_TUNE_SPACE = {"CHUNK": [64, 16], "DOT": ["ieee", "tf32"], "FP32_MIN_WARPS": [8, 4],
                    "WY_INVERSE_WARPS": [1, 2], "STATE_BV": [64, 32], "OUTPUT_BV": [128, 64]}
KDIFF_TUNE_CONFIG = {"CHUNK": 64, "DOT": "ieee", "FP32_MIN_WARPS": 8, "WY_INVERSE_WARPS": 1,
                     "STATE_BV": 64, "OUTPUT_BV": 128}


def _configure(cfg: dict) -> None:
    """Set kernels/gdn's launch tables (before any kernel of this process compiles)."""
    chunk.FP32_MIN_WARPS = cfg["FP32_MIN_WARPS"]
    chunk.WARPS["wy_inverse"] = cfg["WY_INVERSE_WARPS"]
    chunk.BLOCK_V["state_fwd"] = cfg["STATE_BV"]
    chunk.BLOCK_V["output_fwd"] = cfg["OUTPUT_BV"]
    product = mm_tf32 if cfg["DOT"] == "tf32" else tile_ops.mm
    for module in (output, state, wy, kda, gla):
        module.mm = product


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        _configure(KDIFF_TUNE_CONFIG)

    def forward(self, q, k, v, g, beta, initial_state):
        k = F.normalize(k, dim=-1)
        o, final_state = chunk_gated_delta_rule(
            q, k, v, F.logsigmoid(g), torch.sigmoid(beta), initial_state=initial_state,
            output_final_state=True, chunk_size=KDIFF_TUNE_CONFIG["CHUNK"])
        return o, final_state.to(q.dtype)
