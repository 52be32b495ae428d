"""
kdiff-control: CUDA Swish (load_inline) built without fast math: IEEE multiply, subnormals kept
requires: cuda
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# The device code alone needs no CUDA build of torch: it compiles to PTX on any machine with
# nvcc (tests/test_extension_resources.py reads the multiply it gives).
KERNEL_SOURCE = r"""
#include <ATen/OpMathType.h>

template <typename scalar_t>
__global__ void swish_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ y,
                             int64_t n) {
    using opmath_t = at::opmath_type<scalar_t>;
    int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i < n) {
        opmath_t v = static_cast<opmath_t>(x[i]);
        opmath_t s = opmath_t(1) / (opmath_t(1) + exp(-v));
        y[i] = static_cast<scalar_t>(v * s);
    }
}
"""
CUDA_SOURCE = KERNEL_SOURCE + r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAStream.h>

torch::Tensor swish(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "swish: x must be a CUDA tensor");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t n = xc.numel();
    if (n == 0) return y;
    const int threads = 256;
    const int64_t blocks = (n + threads - 1) / threads;
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "swish", [&] {
        swish_kernel<scalar_t><<<blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
            xc.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), n);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""
CPP_SOURCE = "torch::Tensor swish(torch::Tensor x);"

swish_ext = load_inline(name="swish_ieee", cpp_sources=CPP_SOURCE, cuda_sources=CUDA_SOURCE,
                        functions=["swish"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return swish_ext.swish(x)
