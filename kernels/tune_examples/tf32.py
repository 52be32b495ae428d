"""The precision-trading variant the tune examples offer: kernels/gdn's tile product
(`tile_ops.mm`) with its fp32 products in TF32 (operands rounded to 11 significant bits:
u = 2^-11 where fp32 promises 2^-24). Only a GPU judges it: the CPU interpreter computes TF32
dots in fp32."""
import triton
import triton.language as tl


@triton.jit
def mm_tf32(a, b, DT: tl.constexpr):
    """tile_ops.mm with the fp32 products in TF32."""
    if DT == tl.float32:
        out = tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision="tf32")
    else:
        out = tl.dot(a.to(DT), b.to(DT))
    return out
