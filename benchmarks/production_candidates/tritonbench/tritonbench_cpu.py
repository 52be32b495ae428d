"""meta-pytorch/tritonbench's operator kernels on a CPU torch, as files.

tritonbench/__init__.py and each operator's operator.py import the benchmarking harness
(its BenchmarkOperator, its input loaders); the packages above an operator's kernels.py are
registered as bare namespaces over the checkout's folders instead, so only the kernel file
and what it imports (tritonbench.kernels.profile, tritonbench.utils.env_utils) load. The
kernels and autotune configurations are tritonbench's own; the operators' launchers (a few
lines in operator.py) are repeated by the candidates, on plain values and offsets instead of
a nested tensor.
"""

import importlib
import os
import sys
import types

# a checkout of meta-pytorch/tritonbench, the folder holding tritonbench/ (not kept here)
SRC = os.environ.get("TRITONBENCH_SRC", "/tmp/scratch-hunt8/tritonbench")


def load(operator: str) -> types.ModuleType:
    """tritonbench.operators.<operator>.kernels, loaded from the checkout's file."""
    for package in (
        "tritonbench",
        "tritonbench.operators",
        f"tritonbench.operators.{operator}",
        "tritonbench.kernels",
        "tritonbench.utils",
    ):
        if package not in sys.modules:
            module = types.ModuleType(package)
            module.__path__ = [os.path.join(SRC, *package.split("."))]
            sys.modules[package] = module
    return importlib.import_module(f"tritonbench.operators.{operator}.kernels")
