"""TransformerEngine hunt: cross entropy with label smoothing 0.1 and ignore_index -100 (3 of
16 tokens ignored), averaged over the tokens not ignored; the loss and its gradient by the
logits, as TransformerEngine's forward computes both (B x SQ x V, fp32)"""

import torch
import torch.nn as nn
import torch.nn.functional as F

B, SQ, V = 2, 8, 300
IGNORED = ((0, 3), (1, 0), (1, 7))


class Model(nn.Module):
    def forward(self, logits, target):
        with torch.enable_grad():
            x = logits.detach().requires_grad_()
            loss = F.cross_entropy(
                x.view(-1, V), target.view(-1), ignore_index=-100, label_smoothing=0.1
            )
            (grad,) = torch.autograd.grad(loss, x)
        return loss.detach(), grad


def get_inputs():
    target = torch.randint(0, V, (B, SQ))
    for b, s in IGNORED:
        target[b, s] = -100
    return [torch.randn(B, SQ, V), target]


def get_init_inputs():
    return []
