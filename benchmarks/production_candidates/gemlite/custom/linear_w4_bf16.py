"""kdiff-control: gemlite GemLiteLinearTriton (core.py), 4-bit weights packed by gemlite"""

import gemlite_cpu as G
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, w_q, scales, zeros):
        core = G.load("core")
        n, k = w_q.shape
        layer = core.GemLiteLinearTriton(
            4,
            group_size=k // scales.shape[1],
            in_features=k,
            out_features=n,
            input_dtype=core.DType.BF16,
            output_dtype=core.DType.BF16,
        )
        layer.pack(w_q, scales, zeros)
        return layer(x)
