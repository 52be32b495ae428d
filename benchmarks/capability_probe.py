"""What a CUDA worker needs of the judge's privileges (docs/isolation.md): as root, fork a
process that becomes another uid with no capability at all (as a worker whose files are all
open to others runs), then try what candidates do on the GPU, one step at a time: read a
folder of root's alone (it must fail), start CUDA, cuBLAS, a Triton kernel, an inductor graph
and a load_inline build. Run on the device machine (`gpu_session.sh capability`)."""
from __future__ import annotations

import glob
import os
import sys
import time
from typing import Any, Callable

UID = 312345  # no user's: a worker's uids are far above (kdiff.sandbox.confine.worker_uid)
HOME = "/tmp/capability-probe"
SECRET = "/tmp/capability-probe-secret"
TRITON_KERNEL = '''import triton
import triton.language as tl


@triton.jit
def double(x, y, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y + o, tl.load(x + o, mask=o < n) * 2, mask=o < n)
'''
CUDA_SOURCE = ("__global__ void k(float* x) { x[threadIdx.x] *= 2; }\n"
               "torch::Tensor f(torch::Tensor x) { k<<<1, x.numel()>>>(x.data_ptr<float>()); "
               "return x; }")


def step(name: str, f: Callable[[], Any]) -> None:
    start = time.time()
    try:
        result = f()
        print(f"ok   {name} {time.time() - start:.1f}s {result if result is not None else ''}")
    except BaseException as exc:  # noqa: BLE001 - each step's failure is the finding
        print(f"FAIL {name} {time.time() - start:.1f}s {type(exc).__name__}: {str(exc)[:300]}")
    sys.stdout.flush()


def as_another_uid() -> None:
    step("read a folder of root's alone (must fail)", lambda: open(f"{SECRET}/x").read())
    import torch

    def triton_kernel() -> bool:
        with open(f"{HOME}/probe_kernel.py", "w") as f:
            f.write(TRITON_KERNEL)
        sys.path.insert(0, HOME)
        import probe_kernel
        x = torch.randn(1000, device="cuda")
        y = torch.empty_like(x)
        probe_kernel.double[(8,)](x, y, 1000, BLOCK=128)
        torch.cuda.synchronize()
        return bool(torch.equal(y, x * 2))

    def extension() -> float:
        from torch.utils.cpp_extension import load_inline
        m = load_inline("capability_probe", cpp_sources="torch::Tensor f(torch::Tensor x);",
                        cuda_sources=CUDA_SOURCE, functions=["f"])
        return float(m.f(torch.ones(32, device="cuda")).sum())

    step("cuda", torch.cuda.get_device_name)
    step("cublas", lambda: float((torch.randn(256, 256, device="cuda")
                                  @ torch.randn(256, 256, device="cuda")).sum()))
    step("triton", triton_kernel)
    step("inductor", lambda: float(torch.compile(lambda a: (a.sin() * 2).sum())(
        torch.randn(4096, device="cuda"))))
    step("load_inline", extension)


def main() -> None:
    groups = sorted({os.stat(p).st_gid for p in glob.glob("/dev/nvidia*")
                     if not os.path.isdir(p)} - {0})
    os.makedirs(HOME, exist_ok=True)
    os.chown(HOME, UID, UID)
    os.makedirs(SECRET, mode=0o700, exist_ok=True)
    os.chmod(SECRET, 0o700)
    with open(f"{SECRET}/x", "w") as f:
        f.write("the judges' own")
    pid = os.fork()
    if pid == 0:
        os.setgroups(groups)
        os.setresgid(UID, UID, UID)
        os.setresuid(UID, UID, UID)  # from root without KEEPCAPS: every capability goes
        os.environ.update(HOME=HOME, TMPDIR=HOME, TRITON_CACHE_DIR=f"{HOME}/triton",
                          TORCH_EXTENSIONS_DIR=f"{HOME}/extensions")
        effective = next(line for line in open("/proc/self/status") if line.startswith("CapEff"))
        print(f"uid {os.getuid()}, {effective.strip()}, device groups {groups}")
        as_another_uid()
        os._exit(0)
    os.waitpid(pid, 0)


if __name__ == "__main__":
    main()
