"""How many kernels computed their answer themselves: provenance verdicts counted, overall and
among the kernels the benchmark's native check accepts (which no gate can reject for using a
library: their values are right)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kdiff.data.model import Verdict
from kdiff.data.provenance import ProvenanceKind
from kdiff.differential.stats import Rate, wilson

NOT_RECORDED = "n/a"


@dataclass
class ProvenanceCounts:
    kinds: dict[str, int]  # provenance verdict (or n/a) -> kernels
    # Of the native-accepted kernels with a provenance verdict, those that ran no kernel of
    # their own, and those that ran the reference's operators.
    library_only_of_native_accepted: Rate
    reference_call_of_native_accepted: Rate

    def to_json(self) -> dict[str, Any]:
        return {"kinds": self.kinds,
                "library_only_of_native_accepted":
                    self.library_only_of_native_accepted.to_json(),
                "reference_call_of_native_accepted":
                    self.reference_call_of_native_accepted.to_json()}

    def describe(self) -> str:
        kinds = ", ".join(f"{k} {n}" for k, n in self.kinds.items()) or "none recorded"
        return (f"provenance: {kinds}; native-accepted kernels library-only: "
                f"{self.library_only_of_native_accepted.describe()}, reference-call: "
                f"{self.reference_call_of_native_accepted.describe()}")


def provenance_counts(verdicts: list[Verdict]) -> ProvenanceCounts:
    kinds: dict[str, int] = {}
    for v in verdicts:
        key = v.provenance.kind.value if v.provenance and v.provenance.kind else NOT_RECORDED
        kinds[key] = kinds.get(key, 0) + 1
    accepted = [v.provenance.kind for v in verdicts
                if v.native.accept and v.provenance and v.provenance.kind]
    return ProvenanceCounts(
        kinds={k.value: kinds[k.value] for k in ProvenanceKind if k.value in kinds}
        | ({NOT_RECORDED: kinds[NOT_RECORDED]} if NOT_RECORDED in kinds else {}),
        library_only_of_native_accepted=wilson(accepted.count(ProvenanceKind.LIBRARY_ONLY),
                                               len(accepted)),
        reference_call_of_native_accepted=wilson(
            accepted.count(ProvenanceKind.REFERENCE_CALL), len(accepted)))
