"""mamba_ssm's own Mamba-3 Triton kernels (state-spaces/mamba, mamba_ssm/ops/triton/mamba3),
imported from a source checkout that is carried, never committed: MAMBA_SSM_SRC names the
checkout's root (the folder holding mamba_ssm/), by default the repository's .fetched/mamba
(a candidate's worker inherits no such variable: kdiff.sandbox.workerenv). They need a GPU:
their PTX inline assembly (cos.approx, tanh.approx) has an error the ISA bounds but does not
define, so the CPU's interpreter refuses it (kdiff.sandbox.interpreter_ptx).

mamba_ssm/__init__.py imports the whole package (selective_scan_cuda and causal_conv1d, CUDA
extensions built at install): the packages above the mamba3 kernels are registered here as
bare namespaces instead, so only the Triton files load. Their `from einops import ...` is
never called on the SISO paths; where einops is not installed, a stub module stands in for
it and raises if called."""
from __future__ import annotations

import importlib
import os
import sys
import types
from pathlib import Path

import torch.nn as nn

from kdiff.kernels.mamba3.problems import activations

DEFAULT_SOURCE = Path(__file__).resolve().parents[2] / ".fetched" / "mamba"


def _einops_stub() -> types.ModuleType:
    stub = types.ModuleType("einops")

    def unused(*args, **kwargs):
        raise RuntimeError("einops is not installed (the mamba3 SISO kernels never call it)")
    stub.rearrange = stub.repeat = unused
    return stub


def mamba3_module(name: str) -> types.ModuleType:
    """mamba_ssm.ops.triton.mamba3.<name> from $MAMBA_SSM_SRC/mamba_ssm."""
    root = Path(os.environ.get("MAMBA_SSM_SRC", DEFAULT_SOURCE)) / "mamba_ssm"
    for package, folder in (("mamba_ssm", root), ("mamba_ssm.ops", root / "ops"),
                            ("mamba_ssm.ops.triton", root / "ops" / "triton")):
        if package not in sys.modules:
            module = types.ModuleType(package)
            module.__path__ = [str(folder)]
            sys.modules[package] = module
    try:
        importlib.import_module("einops")
    except ImportError:
        sys.modules["einops"] = _einops_stub()
    return importlib.import_module(f"mamba_ssm.ops.triton.mamba3.{name}")


class SequenceCandidate(nn.Module):
    """`mamba3_siso_combined` (angle_dt, the chunked forward, four backward kernels) on
    problems 1 and 2, the inputs in the dtypes the Mamba3 layer gives them: adt, dt, the
    angles, D and the states in fp32."""

    def forward(self, q, k, v, a, dt, trap, q_bias, k_bias, angles, D, z, angle_state,
                ssm_state, k_state, v_state):
        combined = mamba3_module("mamba3_siso_combined").mamba3_siso_combined
        q, k, adt, dt = activations(q, k, a, dt)
        f32 = [x.float() for x in (adt, dt, angles, D, angle_state, ssm_state, k_state,
                                   v_state)]
        out, *states = combined(q, k, v, f32[0], f32[1], trap, q_bias, k_bias, f32[2], f32[3],
                                z, tuple(f32[4:]), chunk_size=64, return_final_states=True)
        return (out, *(s.to(q.dtype) for s in states))


class StepCandidate(nn.Module):
    """`mamba3_siso_step` on problem 3, inputs as SequenceCandidate's."""

    def forward(self, q, k, v, a, dt, trap, q_bias, k_bias, angles, D, z, angle_state,
                ssm_state, k_state, v_state):
        step = mamba3_module("mamba3_siso_step").mamba3_siso_step
        q, k, adt, dt = activations(q, k, a, dt)
        f32 = [x.float() for x in (adt, dt, angles, D, angle_state, ssm_state, k_state,
                                   v_state)]
        out, states = step(q, k, v, f32[0], f32[1], trap, q_bias, k_bias, f32[2], f32[3], z,
                           tuple(f32[4:]))
        return (out, *(s.to(q.dtype) for s in states))
