"""Provenance of a verdict: whether the candidate computed its answer with kernels of its own.

A column beside the native check and the verifier, never a gate: it does not change
`verifier_accept`. The judge decides it (kdiff.verdicts.provenance) from the worker's record
of what ran (kdiff.sandbox.provenance) and its own reading of the candidate's files.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class ProvenanceKind(str, enum.Enum):
    OWN = "own"  # only the candidate's own kernels computed
    MIXED = "mixed"  # its own kernels and library work (the share says how much)
    LIBRARY_ONLY = "library-only"  # no kernel of its own ran
    REFERENCE_CALL = "reference-call"  # the reference's operators ran, in its order


class Origin(str, enum.Enum):
    OWN = "own"
    LIBRARY = "library"


@dataclass
class KernelShare:
    """One kernel (or operator) that ran during the candidate's calls, summed over them."""

    name: str
    origin: Origin
    source: str  # triton, extension, aten, custom op, device, inductor
    launches: int
    seconds: float | None = None  # device time (CUDA); None where not measured

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "origin": self.origin.value, "source": self.source,
                "launches": self.launches, "seconds": self.seconds}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "KernelShare":
        return cls(data["name"], Origin(data["origin"]), data["source"], data["launches"],
                   data.get("seconds"))


@dataclass
class Provenance:
    kind: ProvenanceKind | None  # None: no record the judge could read (`detail` says why)
    kernels: list[KernelShare] = field(default_factory=list)
    library_share: float | None = None  # of `share_basis`; None when nothing ran
    share_basis: str = "launches"  # "device time" on CUDA, else "launches"
    reference_called: bool = False
    outstanding: list[str] = field(default_factory=list)  # work still running at return
    calls: int = 0
    detail: str = ""

    @property
    def shows_own_kernel(self) -> bool:
        """Whether the candidate was seen computing with a kernel of its own: what
        `--require-own-kernel` and `--fail-on provenance` ask for."""
        return self.kind in (ProvenanceKind.OWN, ProvenanceKind.MIXED)

    def label(self) -> str:
        if self.kind is None:
            return "n/a"
        if self.kind is ProvenanceKind.MIXED and self.library_share is not None:
            return f"mixed (library {self.library_share:.0%} of {self.share_basis})"
        return self.kind.value

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.kind.value if self.kind else None,
                "library_share": self.library_share, "share_basis": self.share_basis,
                "reference_called": self.reference_called, "outstanding": self.outstanding,
                "calls": self.calls, "detail": self.detail,
                "kernels": [k.to_json() for k in self.kernels]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Provenance":
        return cls(kind=ProvenanceKind(data["verdict"]) if data.get("verdict") else None,
                   kernels=[KernelShare.from_json(k) for k in data.get("kernels", [])],
                   library_share=data.get("library_share"),
                   share_basis=data.get("share_basis", "launches"),
                   reference_called=bool(data.get("reference_called")),
                   outstanding=list(data.get("outstanding", [])), calls=data.get("calls", 0),
                   detail=data.get("detail", ""))
