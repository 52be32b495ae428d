"""kdiff-control: triton-lang/kernels cross_entropy"""

import torch.nn as nn
import triton_lang_kernels_cpu as K


class ModelNew(nn.Module):
    def forward(self, logits, labels):
        return K.load("cross_entropy").cross_entropy(logits, labels)
