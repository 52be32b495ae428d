"""kdiff-control: lmdeploy fused_noaux_tc_routing (DeepSeek-V3 grouped top-k)"""

import lmdeploy_cpu as L
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, logits, bias):
        return L.load("fused_noaux_tc").fused_noaux_tc_routing(
            logits,
            bias,
            num_experts=logits.shape[-1],
            n_group=4,
            topk_group=2,
            top_k=4,
            renormalize=True,
            routed_scaling_factor=2.5,
        )
