"""
kdiff-redteam: CUDA Swish built with --use_fast_math: the multiply flushes subnormals to zero
expected-gates: EXC-02=subnormal_flushed
requires: cuda
defect: A load_inline CUDA kernel computes x * sigmoid(x) and is built with
  extra_cuda_cflags=["--use_fast_math"] "for speed". nvcc's --use_fast_math implies
  -ftz=true, so the product x * s compiles to mul.ftz.f32 (SASS FMUL.FTZ), which reads a
  subnormal operand as zero and writes a subnormal result as zero: Swish of a subnormal x
  (where the reference returns x / 2) and of any x whose product lands below 2^-126 comes back
  as 0. The benchmark's randn inputs hold no subnormal, and fast math's __expf and approximate
  division stay far inside its tolerance, so the benchmark accepts it. (The flush needs an
  arithmetic instruction with an .ftz form: an earlier fast-math ReLU kept every subnormal on
  the H200, because max.f32 has no flush to do on a value it only compares and copies.)
  Confirmed without a GPU (nvcc 13.0): `nvcc -ptx -arch=sm_90 --use_fast_math` on the device
  code below gives `mul.ftz.f32 %f6, %f1, %f5` for the product and its cubin FMUL.FTZ; without
  the flag (the control, sample 0) the product is `mul.f32`.
  Judged on CUDA only (nvcc and a GPU build the extension).
imitates: LLM-written CUDA extensions that pass --use_fast_math (or -ftz=true) in
  extra_cuda_cflags, a recurring flag in KernelBench samples; nvcc documents --use_fast_math
  as implying --ftz=true --prec-div=false --prec-sqrt=false --fmad=true (CUDA Compiler Driver
  NVCC, "--use_fast_math").
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

swish_ext = load_inline(name="swish_fast_math", cpp_sources=CPP_SOURCE,
                        cuda_sources=CUDA_SOURCE, functions=["swish"],
                        extra_cuda_cflags=["--use_fast_math"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return swish_ext.swish(x)
