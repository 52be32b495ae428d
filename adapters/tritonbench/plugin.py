"""The TritonBench adapter (TritonBench-G and -T)."""
from __future__ import annotations

from kdiff.hookspecs import hookimpl

BENCH = "tritonbench"


@hookimpl
def kdiff_benches():
    return [(BENCH, "TritonBench-G / -T data and generated outputs (jsonl)")]
