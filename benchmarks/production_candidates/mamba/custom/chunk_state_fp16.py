"""kdiff-control: mamba_ssm ssd_chunk_state _chunk_state_fwd (fp16 x and B, states in fp32), dt and dA_cumsum made
by the problem's own torch code, as Mamba-2's _chunk_cumsum_fwd gives them"""

import importlib.util
import os

import mamba_cpu as M
import torch.nn as nn

_spec = importlib.util.spec_from_file_location(
    "chunk_state_problem",
    os.path.join(os.path.dirname(__file__), "..", "problems", "chunk_state_fp16.py"),
)
_problem = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_problem)


class ModelNew(nn.Module):
    def forward(self, B, x, dt, A_log):
        dt, dA_cumsum = _problem.chunked_dt_and_cumsum(dt, A_log)
        return M.load("ssd_chunk_state")._chunk_state_fwd(B, x, dt, dA_cumsum)
