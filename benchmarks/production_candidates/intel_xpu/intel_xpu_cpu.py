"""intel/intel-xpu-backend-for-triton's benchmark kernels on a CPU torch, as files.

Each benchmark file holds its kernel and launcher beside the harness that times it, which
imports the repository's `triton_kernels_benchmark` package (its XPU timers and plots, built
with the repository). That package is registered as a stand-in whose `perf_report` and
`Benchmark` only define the benchmark function (never run here), and each file is loaded by
path under its own name. The kernels, configurations and launchers are the files' own.
"""

import importlib.util
import os
import sys
import types

# a checkout of intel/intel-xpu-backend-for-triton (the folder holding benchmarks/; not kept here)
SRC = os.environ.get("INTEL_XPU_TRITON_SRC", "/tmp/scratch-hunt17/intel")


def _harness() -> None:
    if "triton_kernels_benchmark" not in sys.modules:
        harness = types.ModuleType("triton_kernels_benchmark")
        harness.Benchmark = lambda **arguments: arguments
        harness.perf_report = lambda benchmarks: (lambda function: function)
        harness.sycl_tla_kernel = types.ModuleType("triton_kernels_benchmark.sycl_tla_kernel")
        sys.modules["triton_kernels_benchmark"] = harness


def load(name: str) -> types.ModuleType:
    """benchmarks/triton_kernels_benchmark/<name>.py, loaded by path."""
    _harness()
    qualified = f"intel_xpu_benchmark_{name}"
    if qualified not in sys.modules:
        path = os.path.join(SRC, "benchmarks", "triton_kernels_benchmark", f"{name}.py")
        spec = importlib.util.spec_from_file_location(qualified, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[qualified] = module
        spec.loader.exec_module(module)
    return sys.modules[qualified]
