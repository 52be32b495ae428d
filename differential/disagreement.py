"""How one-directional the disagreement is: the discordant cells of the confusion table,
McNemar's exact test on them, and Wilson intervals on the rates."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kdiff.differential.confusion import Confusion
from kdiff.differential.stats import Rate, mcnemar_exact, wilson


@dataclass
class Disagreement:
    native_only: int
    verifier_only: int
    # Two-sided exact McNemar p-value: how surprising the split between the two discordant
    # cells would be if neither check were systematically laxer than the other.
    mcnemar_p: float
    native_only_rate: Rate  # of the decided kernels
    verifier_only_rate: Rate  # of the decided kernels
    # Of the kernels the benchmark accepts, the share the verifier rejects: the benchmark's
    # false-acceptance rate, if the verifier is right.
    rejected_of_native_accepted: Rate
    # Of the discordant kernels, the share the benchmark accepts: 1.0 is fully one-directional.
    one_directional: Rate

    def to_json(self) -> dict[str, Any]:
        return {"native_only": self.native_only, "verifier_only": self.verifier_only,
                "mcnemar_p": self.mcnemar_p,
                "native_only_rate": self.native_only_rate.to_json(),
                "verifier_only_rate": self.verifier_only_rate.to_json(),
                "rejected_of_native_accepted": self.rejected_of_native_accepted.to_json(),
                "one_directional": self.one_directional.to_json()}


def disagreement(table: Confusion) -> Disagreement:
    b, c = table.native_only, table.verifier_only
    return Disagreement(
        native_only=b, verifier_only=c, mcnemar_p=mcnemar_exact(b, c),
        native_only_rate=wilson(b, table.decided),
        verifier_only_rate=wilson(c, table.decided),
        rejected_of_native_accepted=wilson(b, table.native_accepted),
        one_directional=wilson(b, table.discordant))
