"""The options of one run, as one object that travels from the CLI to the adapters, the judge
and the reports."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kdiff.judging.context import GateOptions
from kdiff.sandbox.process import SandboxLimits


@dataclass
class RunConfig:
    bench: str = "kernelbench"
    native: str | None = None  # preset; None: the adapter's default
    gates: list[str] | None = None  # None: all twelve
    gate_options: GateOptions = field(default_factory=GateOptions)
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    root: Path | None = None
    runs: Path | None = None
    generated: Path | None = None
    level: int | None = None
    problems: list[str] | None = None
    jobs: int = 1
    store: Path | None = None
    exitfirst: bool = False  # stop a kernel's judging at its first failing gate

    @property
    def device(self) -> str:
        return self.gate_options.device
