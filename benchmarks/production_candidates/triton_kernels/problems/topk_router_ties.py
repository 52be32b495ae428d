"""triton_kernels hunt: the router's top 4 of 64 experts on integer-valued logits (many ties:
the kernel keeps the lower expert id, torch.topk any), the chosen logits softmaxed, returned in
ascending order of expert with the expert ids"""

import torch
import torch.nn as nn

TOKENS, EXPERTS, K = 40, 64, 4


class Model(nn.Module):
    def forward(self, logits):
        values, experts = torch.topk(logits, K, dim=1)
        experts, order = experts.sort(dim=1)
        return torch.softmax(values.gather(1, order), dim=1), experts


def get_inputs():
    return [torch.randint(-4, 5, (TOKENS, EXPERTS)).float()]


def get_init_inputs():
    return []
