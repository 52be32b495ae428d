"""lmdeploy hunt: a SwiGLU mixture of experts in fp16 (16 tokens, hidden 32, 4 experts of
intermediate 16, top 2 by the router's logits, weights softmaxed over the chosen), each expert as
transformers' eager experts compute it: gate_up = x W1[e]^T, silu(gate) * up, then W2[e], scaled
by the token's weight and added into the output"""

import torch
import torch.nn as nn
import torch.nn.functional as F

T, H, E, INTER, TOP_K = 16, 32, 4, 16, 2


class Model(nn.Module):
    def forward(self, x, router_logits, gate_up_proj, down_proj):
        weights, experts = torch.topk(router_logits.float(), TOP_K, dim=-1)
        weights = torch.softmax(weights, dim=-1).to(x.dtype)
        out = torch.zeros_like(x)
        for e in range(gate_up_proj.shape[0]):
            token, slot = torch.where(experts == e)
            gate, up = F.linear(x[token], gate_up_proj[e]).chunk(2, dim=-1)
            y = F.linear(F.silu(gate) * up, down_proj[e]) * weights[token, slot, None]
            out.index_add_(0, token, y)
        return out


def get_inputs():
    return [
        torch.randn(T, H).half(),
        torch.randn(T, E).half(),
        (0.2 * torch.randn(E, 2 * INTER, H)).half(),
        (0.2 * torch.randn(E, H, INTER)).half(),
    ]


def get_init_inputs():
    return []
