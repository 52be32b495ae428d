"""The 2x2 table of the native verdict against the verifier's."""
from __future__ import annotations

from dataclasses import asdict, dataclass

from kdiff.data.model import Verdict

CELLS = ("both_accept", "native_only", "verifier_only", "both_reject")


@dataclass
class Confusion:
    both_accept: int = 0
    native_only: int = 0  # the benchmark accepts, the verifier rejects
    verifier_only: int = 0  # the verifier accepts, the benchmark rejects
    both_reject: int = 0
    undecided: int = 0  # either verdict missing (error rows)

    @property
    def decided(self) -> int:
        return self.both_accept + self.native_only + self.verifier_only + self.both_reject

    @property
    def discordant(self) -> int:
        return self.native_only + self.verifier_only

    @property
    def native_accepted(self) -> int:
        return self.both_accept + self.native_only

    def percentages(self) -> dict[str, float | None]:
        """Each cell as a percentage of the decided kernels (None when there are none)."""
        n = self.decided
        return {cell: (100.0 * getattr(self, cell) / n if n else None) for cell in CELLS}

    def to_json(self) -> dict[str, int]:
        return asdict(self)


def confusion(verdicts: list[Verdict]) -> Confusion:
    table = Confusion()
    for v in verdicts:
        native, verifier = v.native.accept, v.verifier_accept
        if native is None or verifier is None:
            table.undecided += 1
        elif native and verifier:
            table.both_accept += 1
        elif native:
            table.native_only += 1
        elif verifier:
            table.verifier_only += 1
        else:
            table.both_reject += 1
    return table
