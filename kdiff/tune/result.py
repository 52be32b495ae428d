"""What a search found: every configuration it evaluated, with its time and its verdict."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

from kdiff.tune.space import Config, describe


class Outcome(str, enum.Enum):
    CORRECT = "correct"      # every gate of the profile passed
    WRONG = "wrong"          # a gate failed
    UNDECIDED = "undecided"  # a gate could not judge (error): neither trusted nor rejected
    UNJUDGED = "unjudged"    # timed only (Triton's autotuner's way)


@dataclass(frozen=True)
class Judgement:
    outcome: Outcome
    failing: tuple[str, ...] = ()  # "GATE:signature" of each failed (or errored) gate
    seconds: float = 0.0           # judging wall time


@dataclass
class Evaluation:
    config: Config
    time: float | None            # the timer's seconds per call; None where it could not time
    judgement: Judgement
    order: int                    # 1-based: the how-many-th new configuration of the search
    # the search's seconds when this one was done, summed as if measured alone: each
    # evaluation's judging, warm-up and timing, where first measured
    elapsed: float
    time_error: str | None = None  # why it could not be timed
    wall: float = 0.0             # wall-clock seconds from the search's start to this one

    @property
    def correct(self) -> bool:
        return self.judgement.outcome is Outcome.CORRECT

    def to_json(self) -> dict:
        return {"config": dict(self.config), "time": self.time,
                "outcome": self.judgement.outcome.value,
                "failing": list(self.judgement.failing), "time_error": self.time_error,
                "order": self.order,
                "elapsed": round(self.elapsed, 3), "wall": round(self.wall, 3)}


@dataclass
class TuneResult:
    method: str
    budget: int
    evaluations: list[Evaluation] = field(default_factory=list)
    default_time: float | None = None
    # the configuration the method returns: the fastest correct one (Triton's autotuner: the
    # fastest timed, judged afterwards)
    chosen: Evaluation | None = None
    history: list[dict] = field(default_factory=list)  # per GRPO step: mean reward, KL, ...

    @property
    def best_correct(self) -> Evaluation | None:
        timed = [e for e in self.evaluations if e.correct and e.time is not None]
        return min(timed, key=lambda e: (e.time, e.order)) if timed else None

    def fast_and_wrong(self) -> list[Evaluation]:
        """Rejected configurations faster than the best correct one (all rejected timed ones
        where none is correct), fastest first."""
        best = self.best_correct
        bound = best.time if best is not None else float("inf")
        return sorted((e for e in self.evaluations if e.judgement.outcome is Outcome.WRONG
                       and e.time is not None and e.time < bound), key=lambda e: e.time)

    def rejected_among_fastest(self, k: int) -> int:
        """Of the k fastest configurations timed, how many the contract rejected."""
        timed = sorted((e for e in self.evaluations if e.time is not None), key=lambda e: e.time)
        return sum(e.judgement.outcome is Outcome.WRONG for e in timed[:k])

    def summary(self) -> dict:
        best = self.best_correct
        return {
            "method": self.method, "budget": self.budget, "evaluated": len(self.evaluations),
            "default_time": self.default_time,
            "chosen": dict(self.chosen.config) if self.chosen else None,
            "chosen_outcome": self.chosen.judgement.outcome.value if self.chosen else None,
            "best_correct": dict(best.config) if best else None,
            "best_correct_time": best.time if best else None,
            "speedup": (self.default_time / best.time
                        if best and self.default_time and best.time else None),
            "best_reached_at": best.order if best else None,
            "best_reached_after_s": round(best.elapsed, 3) if best else None,
            "best_reached_after_wall_s": round(best.wall, 3) if best else None,
            "fast_and_wrong": [describe(e.config) + f" ({', '.join(e.judgement.failing)})"
                               for e in self.fast_and_wrong()],
        }

    def to_json(self) -> dict:
        return {**self.summary(), "evaluations": [e.to_json() for e in self.evaluations],
                "history": self.history}
