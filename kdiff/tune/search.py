"""The searches, each on the same budget of new configurations: GRPO (policy.py), exhaustive
(the space's order), random (without replacement), and Triton's autotuner's way (time the
configurations in order, keep the fastest, check nothing; judged here afterwards, to say
what it would have returned). Every search starts with the default configuration, the
baseline of the speedup."""
from __future__ import annotations

import random
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Callable, Iterable

from kdiff.judging.interrupts import deferred_sigint
from kdiff.tune.judge import JudgeFn
from kdiff.tune.policy import GRPOSettings, Policy
from kdiff.tune.result import Evaluation, Judgement, Outcome, TuneResult
from kdiff.tune.space import Config, Space
from kdiff.tune.timing import Timer

METHODS = ("grpo", "random", "exhaustive", "autotuner")


class Search:
    """Evaluates configurations for one method: judged first, then timed (the rejected ones
    too, so that the result can say which were fast and wrong). A configuration evaluated
    before costs nothing again. `cost` adds up what each evaluation cost where it was first
    measured (judging, the timer's warm-up, timing), so methods that share the judge's and the
    timer's caches are compared as if each had measured alone (on the CPU, configurations that
    share a verdict across launch options each count its judging seconds); each evaluation
    also records the wall seconds since the search began.

    judges > 1: a batch's new configurations (evaluate_all) are judged, and compiled by the
    timer's warm-up, concurrently in that many threads; then they are measured one at a time
    in the batch's order, with nothing else of the search running. The evaluations, their
    order and every result are those of judging and timing them one after another."""

    def __init__(self, method: str, space: Space, judge: JudgeFn, timer: Timer,
                 budget: int, deadline: float | None = None, judges: int = 1) -> None:
        """deadline: a time.monotonic() past which no new batch is begun and no
        configuration judged; one judged already (side by side in its batch) is still
        measured, which costs seconds where its judging cost tens."""
        if budget < 1:
            raise ValueError("the budget is at least one configuration (the default)")
        if judges < 1:
            raise ValueError("judges: at least 1")
        self.space, self.judge, self.timer = space, judge, timer
        self.result = TuneResult(method, budget)
        self.seen: dict[Config, Evaluation] = {}
        self.cost = 0.0
        self.deadline = deadline
        self.judges = judges
        self.began = time.monotonic()

    @property
    def past_deadline(self) -> bool:
        return self.deadline is not None and time.monotonic() > self.deadline

    @property
    def room(self) -> int:
        """New configurations the budget still allows."""
        return self.result.budget - len(self.seen)

    @property
    def spent(self) -> bool:
        return self.room <= 0 or self.past_deadline

    def evaluate(self, config: Config, judged: bool = True) -> Evaluation:
        return self.evaluate_all([config], judged)[0]

    def evaluate_all(self, configs: list[Config], judged: bool = True) -> list[Evaluation]:
        """The evaluations of `configs`, in their order, as far as they got: a batch whose
        members are known before any is evaluated. Its new configurations (at most the room
        the budget leaves) are judged, concurrently where judges > 1, then timed one at a
        time; past the deadline, those still to be judged are left (unevaluated: the list
        stops before the first of them)."""
        new = list(dict.fromkeys(c for c in configs if c not in self.seen))
        if len(new) > self.room:
            raise ValueError(f"a batch of {len(new)} new configurations, {self.room} left in "
                             "the budget")
        # A batch of one has nothing to overlap: judged and measured as with judges = 1.
        ready = self._judge_and_warm(new, judged) if self.judges > 1 and len(new) > 1 else {}
        for i, config in enumerate(new):
            if i and self.past_deadline and config not in ready:
                break  # not judged, not measured, not counted
            if config in ready:
                judgement, warm = ready[config]
            else:
                judgement, warm = (self.judge(config) if judged
                                   else Judgement(Outcome.UNJUDGED)), 0.0
            timing = self.timer(config)
            self.cost += judgement.seconds + warm + timing.cost
            ev = Evaluation(config, timing.seconds, judgement, len(self.seen) + 1, self.cost,
                            timing.error, time.monotonic() - self.began)
            self.seen[config] = ev
            self.result.evaluations.append(ev)
        done = []
        for config in configs:
            if config not in self.seen:
                break
            done.append(self.seen[config])
        return done

    def _judge_and_warm(self, configs: list[Config], judged: bool
                        ) -> dict[Config, tuple[Judgement, float]]:
        """Each configuration judged (where `judged`) and then warmed up by the timer (where
        it can), in up to `judges` threads, all done before this returns: no measurement
        runs meanwhile. On Ctrl-C the judge's and the timer's processes are stopped."""
        warm: Callable[[Config], float] | None = getattr(self.timer, "warm", None)
        if not judged and warm is None:
            return {}

        def prepare(config: Config) -> tuple[Judgement, float]:
            judgement = self.judge(config) if judged else Judgement(Outcome.UNJUDGED)
            return judgement, (warm(config) if warm is not None else 0.0)

        with deferred_sigint() as interrupted, \
                ThreadPoolExecutor(min(self.judges, len(configs)),
                                   thread_name_prefix="kdiff-tune") as pool:
            futures = {pool.submit(prepare, c): c for c in configs}
            pending = set(futures)
            while pending:
                _, pending = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
                if interrupted.is_set():
                    for future in pending:
                        future.cancel()
                    for part in (self.judge, self.timer):
                        stop = getattr(part, "stop", None)
                        if stop is not None:
                            stop()
                    wait(pending)
                    raise KeyboardInterrupt
        return {c: f.result() for f, c in futures.items()}

    def start(self, judged: bool = True) -> None:
        self.result.default_time = self.evaluate(self.space.default, judged).time

    def finish(self) -> TuneResult:
        self.result.chosen = self.result.best_correct
        return self.result


def in_batches(search: Search, order: Iterable[Config], judged: bool = True) -> None:
    """Evaluate `order` until the budget or the deadline: batches of up to `judges` new
    configurations (never more than the budget's room), each begun before the deadline."""
    remaining = iter(order)
    while not search.spent:
        size = min(search.judges, search.room)
        batch = []
        for config in remaining:
            if config not in search.seen:
                batch.append(config)
                if len(batch) == size:
                    break
        if not batch or len(search.evaluate_all(batch, judged)) < len(batch):
            break


def exhaustive(search: Search) -> TuneResult:
    search.start()
    in_batches(search, search.space)
    return search.finish()


def random_search(search: Search, seed: int) -> TuneResult:
    search.start()
    configs = list(search.space)
    random.Random(seed).shuffle(configs)
    in_batches(search, configs)
    return search.finish()


def autotuner(search: Search) -> TuneResult:
    """Triton's autotuner on the same budget: the configurations timed in order, the fastest
    returned unchecked. Its pick is then judged, to report whether it was correct."""
    search.start(judged=False)
    in_batches(search, search.space, judged=False)
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
    which cost nothing and end no search; default 4x the groups the budget buys, see below).
    A group is sampled whole, up to the first new configuration the budget or the deadline
    leaves no room for, and then evaluated as one batch (one configuration at a time where
    judges = 1): sampling does not depend on the group's evaluations, so either way the
    policy sees the same groups."""
    search.start()
    policy = Policy(search.space, settings, seed)
    # A group of G costs at most G new configurations; 4x the budget's groups leaves room for
    # groups made mostly of configurations seen before once the policy concentrates.
    steps = max_steps if max_steps is not None else 4 * (search.result.budget // settings.group + 1)
    batch = search.judges > 1
    for step in range(steps):
        group: list[Config] = []
        fresh: set[Config] = set()  # new configurations of the group, not yet evaluated
        for _ in range(settings.group):
            config = policy.sample()
            if config not in search.seen and config not in fresh:
                if search.room - len(fresh) <= 0 or search.past_deadline:
                    break
                if batch:
                    fresh.add(config)
                else:
                    search.evaluate(config)
            group.append(config)
        if batch:
            group = group[:len(search.evaluate_all(group))]
        rewards = [reward(search.seen[c], search.result.default_time, settings.penalty)
                   for c in group]
        if len(group) > 1:
            stats = policy.update(group, rewards)
            search.result.history.append({"step": step, "evaluated": len(search.seen),
                                          **stats, "probabilities": policy.probabilities()})
        if search.spent and len(group) < settings.group:
            break
    return search.finish()


def run(method: str, space: Space, judge: JudgeFn, timer: Timer, budget: int, seed: int = 0,
        settings: GRPOSettings | None = None, deadline: float | None = None,
        judges: int = 1) -> TuneResult:
    """judges: configurations judged at once (Search); the judge must allow as many threads
    (ConfigJudge(judges=N))."""
    search = Search(method, space, judge, timer, budget, deadline, judges)
    if method == "grpo":
        return grpo(search, settings or GRPOSettings(), seed)
    if method == "random":
        return random_search(search, seed)
    if method == "exhaustive":
        return exhaustive(search)
    if method == "autotuner":
        return autotuner(search)
    raise ValueError(f"unknown method {method!r}; known: {', '.join(METHODS)}")

