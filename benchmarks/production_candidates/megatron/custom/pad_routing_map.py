"""kdiff-control: Megatron-LM fused_pad_routing_map"""

import megatron_cpu as M
import torch.nn as nn

PAD = 8


class ModelNew(nn.Module):
    def forward(self, routing_map):
        return M.load("fusions.fused_pad_routing_map").fused_pad_routing_map(routing_map, PAD)
