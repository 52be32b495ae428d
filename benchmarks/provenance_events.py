"""The profiler's events around one recorded call of a candidate, on CUDA: what the provenance
recorder (kdiff.sandbox.provenance) sees, with times relative to its return marker.
Usage: python3 benchmarks/provenance_events.py PROBLEM CANDIDATE [CALLS]"""
from __future__ import annotations

import importlib.util
import sys

import torch

from kdiff.sandbox.provenance import ProvenanceRecorder


def load(path: str):
    spec = importlib.util.spec_from_file_location("module", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    problem, candidate = load(sys.argv[1]), load(sys.argv[2])
    calls = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    model = candidate.ModelNew(*problem.get_init_inputs()).cuda()
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()]
    recorder = ProvenanceRecorder("cuda")
    recorder.install()
    recorder.watch(model)
    for call in range(calls):
        profiler = recorder._profiler()
        with profiler:
            model(*inputs)
            recorder._returned()
        events = profiler.profiler.kineto_results.events()
        marker = next((e.start_ns() for e in events if e.name() == recorder.RETURNED), None)
        print(f"call {call}: marker {marker}")
        for e in events:
            if e.device_type() == torch.autograd.DeviceType.CUDA or e.name() == recorder.RETURNED:
                start, end = (None if marker is None else (t - marker) / 1e6
                              for t in (e.start_ns(), e.end_ns()))
                print(f"  {str(e.device_type()):22} {e.name()[:60]:60} start {start} ms"
                      f" end {end} ms dur {e.duration_ns() / 1e6:.3f} ms"
                      f" res {e.device_resource_id()}")
    with recorder.candidate(model):
        model(*inputs)
    print(recorder.record)


if __name__ == "__main__":
    main()
