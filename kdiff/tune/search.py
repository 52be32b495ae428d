"""The searches, each on the same budget of new configurations: GRPO (policy.py), exhaustive
(the space's order), random (without replacement), and Triton's autotuner's way (time the
configurations in order, keep the fastest, check nothing; judged here afterwards, to say
what it would have returned). Every search starts with the default configuration, the
baseline of the speedup."""
from __future__ import annotations

import random
import time

from kdiff.tune.judge import JudgeFn
from kdiff.tune.policy import GRPOSettings, Policy
from kdiff.tune.result import Evaluation, Judgement, Outcome, TuneResult
from kdiff.tune.space import Config, Space
from kdiff.tune.timing import Timer

METHODS = ("grpo", "random", "exhaustive", "autotuner")


class Search:
    """Evaluates configurations for one method: judged first, then timed (the rejected ones
    too, so that the result can say which were fast and wrong). A configuration evaluated
    before costs nothing again. `elapsed` adds up what each evaluation cost where it was
    first measured (judging and timing), so methods that share the judge's and the timer's
    caches are compared as if each had measured alone (on the CPU, configurations that share
    a verdict across launch options each count its judging seconds)."""

    def __init__(self, method: str, space: Space, judge: JudgeFn, timer: Timer,
                 budget: int, deadline: float | None = None) -> None:
        """deadline: a time.monotonic() past which no new configuration is begun."""
        if budget < 1:
            raise ValueError("the budget is at least one configuration (the default)")
        self.space, self.judge, self.timer = space, judge, timer
        self.result = TuneResult(method, budget)
        self.seen: dict[Config, Evaluation] = {}
        self.cost = 0.0
        self.deadline = deadline

    @property
    def spent(self) -> bool:
        return len(self.seen) >= self.result.budget or (
            self.deadline is not None and time.monotonic() > self.deadline)

    def evaluate(self, config: Config, judged: bool = True) -> Evaluation:
        if config in self.seen:
            return self.seen[config]
        judgement = self.judge(config) if judged else Judgement(Outcome.UNJUDGED)
        timing = self.timer(config)
        self.cost += judgement.seconds + timing.cost
        ev = Evaluation(config, timing.seconds, judgement, len(self.seen) + 1, self.cost,
                        timing.error)
        self.seen[config] = ev
        self.result.evaluations.append(ev)
        return ev

    def start(self, judged: bool = True) -> None:
        self.result.default_time = self.evaluate(self.space.default, judged).time

    def finish(self) -> TuneResult:
        self.result.chosen = self.result.best_correct
        return self.result


def exhaustive(search: Search) -> TuneResult:
    search.start()
    for config in search.space:
        if search.spent:
            break
        search.evaluate(config)
    return search.finish()


def random_search(search: Search, seed: int) -> TuneResult:
    search.start()
    configs = list(search.space)
    random.Random(seed).shuffle(configs)
    for config in configs:
        if search.spent:
            break
        search.evaluate(config)
    return search.finish()


def autotuner(search: Search) -> TuneResult:
    """Triton's autotuner on the same budget: the configurations timed in order, the fastest
    returned unchecked. Its pick is then judged, to report whether it was correct."""
    search.start(judged=False)
    for config in search.space:
        if search.spent:
            break
        search.evaluate(config, judged=False)
    timed = [e for e in search.result.evaluations if e.time is not None]
    if timed:
        pick = min(timed, key=lambda e: e.time)
        pick.judgement = search.judge(pick.config)
        search.result.chosen = pick
    return search.result


def reward(ev: Evaluation, default_time: float | None, penalty: float) -> float:
    """The speedup over the default where every gate passed; `penalty` otherwise (a rejected,
    undecided or untimed configuration)."""
    if ev.correct and ev.time is not None and default_time:
        return default_time / ev.time
    return penalty


def grpo(search: Search, settings: GRPOSettings, seed: int, max_steps: int | None = None
         ) -> TuneResult:
    """Groups sampled from the policy until the budget of new configurations is spent (or
    max_steps groups: a policy that has converged samples only configurations seen before,
    which cost nothing and end no search; default 4x the groups the budget buys, see below)."""
    search.start()
    policy = Policy(search.space, settings, seed)
    # A group of G costs at most G new configurations; 4x the budget's groups leaves room for
    # groups made mostly of configurations seen before once the policy concentrates.
    steps = max_steps if max_steps is not None else 4 * (search.result.budget // settings.group + 1)
    for step in range(steps):
        group: list[Config] = []
        rewards: list[float] = []
        for _ in range(settings.group):
            config = policy.sample()
            if config not in search.seen and search.spent:
                break
            group.append(config)
            rewards.append(reward(search.evaluate(config), search.result.default_time,
                                  settings.penalty))
        if len(group) > 1:
            stats = policy.update(group, rewards)
            search.result.history.append({"step": step, "evaluated": len(search.seen),
                                          **stats, "probabilities": policy.probabilities()})
        if search.spent and len(group) < settings.group:
            break
    return search.finish()


def run(method: str, space: Space, judge: JudgeFn, timer: Timer, budget: int, seed: int = 0,
        settings: GRPOSettings | None = None, deadline: float | None = None) -> TuneResult:
    search = Search(method, space, judge, timer, budget, deadline)
    if method == "grpo":
        return grpo(search, settings or GRPOSettings(), seed)
    if method == "random":
        return random_search(search, seed)
    if method == "exhaustive":
        return exhaustive(search)
    if method == "autotuner":
        return autotuner(search)
    raise ValueError(f"unknown method {method!r}; known: {', '.join(METHODS)}")

