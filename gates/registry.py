"""The twelve gates, in catalogue order. A gate is one module with one class."""
from __future__ import annotations

import importlib

from kdiff.gates.base import Gate

GATE_MODULES = [
    ("EXC-01", "exc01_nonfinite"),
    ("EXC-02", "exc02_subnormal"),
    ("ORD-02", "ord02_determinism"),
    ("RES-01", "res01_memory"),
    ("RES-02", "res02_resources"),
    ("CMP-01", "cmp01_distributions"),
    ("CMP-02", "cmp02_statelessness"),
    ("CMP-03", "cmp03_shapes"),
    ("ORD-01", "ord01_summation"),
    ("PRC-01", "prc01_precision"),
    ("PRC-02", "prc02_accumulator"),
    ("PRC-03", "prc03_range"),
]


def _load(module_name: str) -> type[Gate]:
    module = importlib.import_module(f"kdiff.gates.{module_name}")
    gates = [v for v in vars(module).values()
             if isinstance(v, type) and issubclass(v, Gate) and v.__module__ == module.__name__
             and getattr(v, "id", None)]
    assert len(gates) == 1, f"{module_name} must define exactly one gate"
    return gates[0]


def all_gates() -> list[Gate]:
    return [_load(m)() for _, m in GATE_MODULES]


def select(ids: list[str] | None) -> list[Gate]:
    """The gates named by `ids` (all twelve when None), in catalogue order."""
    if not ids:
        return all_gates()
    modules = dict(GATE_MODULES)
    unknown = [i for i in ids if i not in modules]
    if unknown:
        raise KeyError(f"unknown gate(s) {', '.join(unknown)}; known: {', '.join(modules)}")
    return [_load(m)() for gid, m in GATE_MODULES if gid in ids]
