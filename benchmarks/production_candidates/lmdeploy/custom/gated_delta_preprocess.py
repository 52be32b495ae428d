"""kdiff-control: lmdeploy gated_delta_preprocess (fp32 path: one Triton kernel)"""

import lmdeploy_cpu as L
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, q, k, b, a, dt_bias, a_log_exp):
        module = L.load("gated_delta_preprocess")
        ratio = b.shape[-1] // q.shape[-2]  # value heads per key head
        return module.gated_delta_preprocess(q, k, b, a, dt_bias, a_log_exp, kv_ratio=ratio)
