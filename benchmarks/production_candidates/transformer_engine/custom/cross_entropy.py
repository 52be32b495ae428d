"""kdiff-control: TransformerEngine cross_entropy_forward (online softmax, then loss and
gradient), reduce_loss, label smoothing 0.1"""

import te_cpu as T
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, logits, target):
        loss, grad = T.load("cross_entropy").cross_entropy_forward(
            logits,
            target,
            label_smoothing=0.1,
            reduce_loss=True,
            dist_process_group=None,
            ignore_idx=-100,
        )
        return loss.reshape(()), grad
