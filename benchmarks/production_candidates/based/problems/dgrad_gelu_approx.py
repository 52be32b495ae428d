"""based hunt: the input gradient through a linear layer and the tanh-approximated GELU after
the layer before it: (dy W) * gelu_tanh'(a), dy (256 x 256), W (256 x 200), the activation's
saved input a (256 x 200); fp16 in and out, the products summed in fp32, the saved input read
at fp16 and the derivative taken in fp32"""

import torch
import torch.nn as nn

M, K, N = 256, 256, 200
KDIFF_DTYPES = ("float16",)
KDIFF_ACCUMULATION = "float32"  # the kernel's tl.dot accumulates in fp32, the derivative there


class Model(nn.Module):
    def forward(self, grad_output, weight, act_input):
        a = act_input.float().requires_grad_()
        with torch.enable_grad():
            (derivative,) = torch.autograd.grad(
                torch.nn.functional.gelu(a, approximate="tanh").sum(), a)
        return (grad_output.float() @ weight.float() * derivative).to(grad_output.dtype)


def get_inputs():
    return [torch.randn(M, K).half(), (torch.randn(K, N) / K**0.5).half(), torch.randn(M, N).half()]


def get_init_inputs():
    return []
