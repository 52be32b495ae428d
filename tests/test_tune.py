"""`kdiff tune`: the launch space read without running the candidate, GRPO's update, and the
searches on the shipped example (kernels/tune_examples), judged by the real gates with an
injected timer (the interpreter does not time): its fastest configurations are wrong, and the
tuner returns the best correct one and lists them."""
import json
from pathlib import Path

import pytest
import torch

from kdiff.judging.context import GateOptions
from kdiff.judging.runconfig import RunConfig
from kdiff.tune.judge import ConfigJudge
from kdiff.tune.policy import GRPOSettings, Policy
from kdiff.tune.result import Judgement, Outcome
from kdiff.tune.search import run
from kdiff.tune.space import Knob, Space, SpaceError, configured_source, read_space
from kdiff.tune.timing import injected

EXAMPLE = Path(__file__).parent.parent / "kernels" / "tune_examples"
PROBLEM, CANDIDATE = EXAMPLE / "row_sum.py", EXAMPLE / "row_sum_triton.py"


def example_time(config) -> float:
    """A made-up GPU time: wider steps, more rows per program, fp16 adds and 4 warps are
    faster, so the fastest configurations are the wrong ones."""
    c = dict(config)
    return 1e-3 / (c["BLOCK"] * c["ROWS"] * (2 if c["ACC_FP16"] else 1)
                   * (1.5 if c["num_warps"] == 4 else 1))


def test_the_space_is_read_as_literals_never_by_running_the_candidate(tmp_path):
    hostile = tmp_path / "c.py"
    hostile.write_text("raise SystemExit('ran')\nKDIFF_TUNE_SPACE = {'B': [1, 2]}\n"
                       "KDIFF_TUNE_CONFIG = {'B': 1}\n")
    space = read_space(hostile)
    assert [k.choices for k in space.knobs] == [(1, 2)] and space.default == (("B", 1),)
    configured = tmp_path / "d.py"
    configured.write_text(configured_source(hostile.read_text(), (("B", 2),)))
    assert read_space(configured).default == (("B", 2),)  # the last assignment is the config
    computed = tmp_path / "e.py"
    computed.write_text("KDIFF_TUNE_SPACE = {'B': list(range(3))}\nKDIFF_TUNE_CONFIG = {'B': 0}\n")
    with pytest.raises(SpaceError, match="not a literal"):
        read_space(computed)
    outside = tmp_path / "f.py"
    outside.write_text("KDIFF_TUNE_SPACE = {'B': [1, 2]}\nKDIFF_TUNE_CONFIG = {'B': 3}\n")
    with pytest.raises(SpaceError, match="not one of"):
        read_space(outside)


def test_exclusions_and_order():
    space = read_space(CANDIDATE)
    configs = list(space)
    assert len(configs) == 3 * 2 * 2 * 2 - 4  # BLOCK 64 with one warp excluded
    assert all(not (dict(c)["BLOCK"] == 64 and dict(c)["num_warps"] == 1) for c in configs)
    assert configs[0] == (("BLOCK", 16), ("ROWS", 1), ("ACC_FP16", False), ("num_warps", 1))


def test_a_grpo_step_moves_probability_to_the_better_half_of_the_group():
    space = Space([Knob("A", (0, 1, 2)), Knob("B", (0, 1))], (("A", 0), ("B", 0)))
    policy = Policy(space, GRPOSettings(), seed=0)
    group = [(("A", a), ("B", b)) for a in range(3) for b in range(2)]
    stats = policy.update(group, [float(a == 2) for a, _ in (space.index(c) for c in group)])
    a_probs, b_probs = policy.probabilities()
    assert a_probs[2] > 0.5 and max(a_probs[:2]) < 1 / 3
    assert b_probs == pytest.approx([0.5, 0.5])  # B had no say in the reward
    assert stats["kl"] > 0
    skewed = Policy(space, GRPOSettings(), seed=0)
    with torch.no_grad():
        skewed.logits[0].copy_(torch.tensor([0.0, 0.0, 3.0]))
    before = skewed.probabilities()[0][2]
    skewed.update(group, [1.0] * len(group))  # equal rewards: only the KL acts, toward uniform
    assert 1 / 3 < skewed.probabilities()[0][2] < before


def test_grpo_never_returns_a_rejected_configuration():
    """A space where the fastest choices of two knobs are wrong: whatever GRPO samples, the
    configuration it returns passed, and every faster one it saw is listed as rejected."""
    space = Space([Knob("X", tuple(range(6))), Knob("FAST", (False, True))],
                  (("X", 0), ("FAST", False)))

    def judge(config):
        wrong = dict(config)["FAST"] or dict(config)["X"] == 5
        return Judgement(Outcome.WRONG if wrong else Outcome.CORRECT,
                         ("PRC-01:below_working_precision",) if wrong else ())

    def time(config):
        return 10.0 - dict(config)["X"] - 3 * dict(config)["FAST"]

    result = run("grpo", space, judge, injected(time), budget=8, seed=0)
    assert len(result.evaluations) <= 8
    assert result.chosen.correct
    assert all(e.time < result.chosen.time and not e.correct for e in result.fast_and_wrong())
    assert {e.config for e in result.evaluations if e.time < result.chosen.time} == \
        {e.config for e in result.fast_and_wrong()}


def test_grpo_finds_faster_correct_configurations_than_random_search_on_the_same_budget():
    """2048 configurations whose times are a product of one factor per knob, where FAST halves
    the time and is wrong: on 64 configurations GRPO learns which choice of each knob is
    fastest, random search (64/2048 of the space) cannot; compared over seeds, not one."""
    knobs = [Knob(f"K{i}", (0, 1, 2, 3)) for i in range(5)] + [Knob("FAST", (False, True))]
    space = Space(knobs, tuple((k.name, k.choices[0]) for k in knobs))

    def judge(config):
        wrong = dict(config)["FAST"]
        return Judgement(Outcome.WRONG if wrong else Outcome.CORRECT,
                         ("PRC-01:below_working_precision",) if wrong else ())

    def time(config):
        c, t = dict(config), 1.0
        for i in range(5):
            t *= (1.0, 0.8, 0.9, 1.1)[c[f"K{i}"]]
        return t * (0.5 if c["FAST"] else 1.0)

    best = 0.8 ** 5
    ratio = {}
    for method in ("grpo", "random"):
        results = [run(method, space, judge, injected(time), 64, seed) for seed in range(6)]
        assert all(r.chosen.correct and len(r.evaluations) <= 64 for r in results)
        ratio[method] = sum(r.chosen.time / best for r in results) / len(results)
    assert ratio["grpo"] < ratio["random"], ratio


@pytest.fixture(scope="module")
def example_judge(tmp_path_factory):
    space = read_space(CANDIDATE)
    config = RunConfig(gates=["PRC-01", "RES-01"], gate_options=GateOptions(device="cpu"))
    return space, ConfigJudge(PROBLEM, CANDIDATE, space, config,
                              tmp_path_factory.mktemp("tune"))


def test_the_tuner_returns_the_best_correct_configuration_and_the_fast_wrong_ones(example_judge):
    space, judge = example_judge
    budget = 12  # of the space's 20 configurations
    results = {m: run(m, space, judge, injected(example_time), budget, seed=0)
               for m in ("grpo", "exhaustive", "autotuner")}
    grpo = results["grpo"]
    best = (("BLOCK", 64), ("ROWS", 1), ("ACC_FP16", False), ("num_warps", 4))
    assert grpo.chosen.config == best and grpo.chosen.correct
    assert len(grpo.evaluations) <= budget
    assert grpo.summary()["speedup"] == pytest.approx(4.0)  # BLOCK 16 -> 64, warps the same
    wrong = {e.config: e.judgement.failing for e in grpo.fast_and_wrong()}
    assert wrong, "the fastest configurations GRPO saw are wrong"
    for config, failing in wrong.items():
        c = dict(config)
        # fp16 accumulation is PRC-01's; the rows never written are RES-01's
        assert ("PRC-01:below_working_precision" in failing) == (c["ACC_FP16"] or c["ROWS"] > 1)
        assert ("RES-01:uninitialised_output" in failing) == (c["ROWS"] > 1)
    assert grpo.rejected_among_fastest(3) == 3
    # the space's order reaches BLOCK 64 only at its 17th configuration: past this budget
    assert results["exhaustive"].chosen.config != best
    # Triton's way returns the fastest it timed, fp16 accumulation and unwritten rows included
    pick = results["autotuner"].chosen
    assert pick.judgement.outcome is Outcome.WRONG and dict(pick.config)["ROWS"] == 4


def test_kdiff_tune_command(tmp_path, capsys):
    from kdiff.commands.cli import main
    out = tmp_path / "tune.json"
    args = ["tune", "--problem", str(PROBLEM), "--candidate", str(CANDIDATE), "--device", "cpu",
            "--gates", "PRC-01"]
    assert main([*args, "--json", str(out)]) == 2  # do_bench on the CPU: refused
    assert "needs --device cuda" in capsys.readouterr().err
    assert main([*args, "--timer", "wall", "--budget", "1", "--methods", "exhaustive",
                 "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    (result,) = report["results"]
    assert result["chosen"] == dict(read_space(CANDIDATE).default)
    assert result["evaluations"][0]["outcome"] == "correct"
    assert result["evaluations"][0]["time"] > 0
    assert result["evaluations"][0]["wall"] >= result["evaluations"][0]["elapsed"] > 0
    assert main([*args, "--timer", "wall", "--judges", "0"]) == 2
    assert "--judges" in capsys.readouterr().err


@pytest.mark.slow  # about 15 s; the judges it starts are judged in the default set below
def test_kdiff_tune_command_judges_side_by_side(tmp_path):
    """--judges 2 through the command: judge processes and warm-ups beside each other, then
    the measurements; the same verdicts and order as the in-process judge gives."""
    from kdiff.commands.cli import main
    out = tmp_path / "tune.json"
    args = ["tune", "--problem", str(PROBLEM), "--candidate", str(CANDIDATE), "--device", "cpu",
            "--gates", "PRC-01", "--timer", "wall", "--budget", "3", "--methods", "exhaustive",
            "--json", str(out)]
    assert main([*args, "--judges", "2"]) == 0
    (result,) = json.loads(out.read_text())["results"]
    space = read_space(CANDIDATE)
    # the default first, then the space's order: the two after it judged side by side
    configs = [space.default] + [c for c in space if c != space.default][:2]
    assert [e["config"] for e in result["evaluations"]] == [dict(c) for c in configs]
    assert [e["order"] for e in result["evaluations"]] == [1, 2, 3]
    assert [e["outcome"] for e in result["evaluations"]] == ["correct", "correct", "wrong"]
    assert all(e["time"] > 0 for e in result["evaluations"])


def test_policy_probabilities_are_distributions():
    policy = Policy(read_space(CANDIDATE), GRPOSettings(), seed=0)
    for probs in policy.probabilities():
        assert sum(probs) == pytest.approx(1.0) and torch.tensor(probs).min() > 0


# -- --judges N: batches judged side by side, measured one at a time ---------------------
def test_config_judge_shares_one_judgement_per_key_across_threads(example_judge, tmp_path):
    """Threads asking for configurations that share a verdict (the CPU ignores num_warps)
    wait for one judgement; the configured copy is written once (never rewritten under a
    reader); the in-process judge refuses threads."""
    import threading
    import time as clock
    space, _ = example_judge
    config = RunConfig(gates=["PRC-01"], gate_options=GateOptions(device="cpu"))
    judge = ConfigJudge(PROBLEM, CANDIDATE, space, config, tmp_path, judges=4)
    calls = []

    def fake(cfg):
        calls.append(cfg)
        clock.sleep(0.2)
        return Judgement(Outcome.CORRECT, (), 1.0), True
    judge._judge = fake
    same = [c for c in space if dict(c)["BLOCK"] == 16 and dict(c)["ROWS"] == 1
            and not dict(c)["ACC_FP16"]]
    assert len(same) == 2  # num_warps 1 and 4
    answers = []
    threads = [threading.Thread(target=lambda c=c: answers.append(judge(c)))
               for c in same * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(answers) == 4 and len(set(map(id, answers))) == 1
    path = judge.write(same[0])
    path.write_text(path.read_text() + "# marker\n")
    assert judge.write(same[0]) == path and path.read_text().endswith("# marker\n")
    (tmp_path / "serial").mkdir()
    serial = ConfigJudge(PROBLEM, CANDIDATE, space, config, tmp_path / "serial")
    failed = []
    thread = threading.Thread(target=lambda: failed.append(pytest.raises(
        RuntimeError, serial, same[0])))
    thread.start()
    thread.join()
    assert failed and "main thread" in str(failed[0].value)


def test_judge_processes_give_the_in_process_verdicts(example_judge):
    """Real judgements side by side in two judge processes: the verdicts of the in-process
    judge, configuration by configuration."""
    from concurrent.futures import ThreadPoolExecutor
    space, serial = example_judge
    configs = [c for c in space if dict(c)["num_warps"] == 4 and dict(c)["BLOCK"] == 16]
    with ConfigJudge(PROBLEM, CANDIDATE, space, serial.config, serial.workdir,
                     judges=2) as side_by_side:
        with ThreadPoolExecutor(2) as pool:
            parallel = list(pool.map(side_by_side, configs))
        assert len(side_by_side._processes._live) <= 2
    def gates(failing):  # a config that leaves its output unwritten fails RES-01 by what the
        return sorted(f.split(":")[0] for f in failing)  # memory held: its signature varies

    for config, judgement in zip(configs, parallel):
        expected = serial(config)
        assert (judgement.outcome, gates(judgement.failing)) == (expected.outcome,
                                                                 gates(expected.failing))
    assert {j.outcome for j in parallel} == {Outcome.CORRECT, Outcome.WRONG}


def test_the_timer_warms_up_without_measuring(tmp_path):
    """The warm-up process builds and calls the candidate and reports no time; without a
    compile cache there is nothing to warm."""
    from kdiff.tune.timing import ProcessTimer
    space = read_space(CANDIDATE)
    judge = ConfigJudge(PROBLEM, CANDIDATE, space,
                        RunConfig(gates=["PRC-01"], gate_options=GateOptions(device="cpu")),
                        tmp_path)
    timer = ProcessTimer(PROBLEM, judge.write, "cpu", "wall", compile_cache=tmp_path / "tc")
    out, err, status, _ = timer._run(judge.write(space.default), ["--warm-up"])
    assert status == 0 and json.loads(out.strip().splitlines()[-1]) == {"warmed": True}, err
    seconds = timer.warm(space.default)
    assert seconds > 0 and timer.warm(space.default) == seconds and not timer.cache
    bare = ProcessTimer(PROBLEM, judge.write, "cpu", "wall")
    assert bare.warm(space.default) == 0.0 and not bare.warmed


class Instrumented:
    """An injected judge and timer (with a warm-up) that record what runs at once: judges
    sleep so that the threads overlap; each asserts nothing else of the search runs while a
    configuration is measured."""

    def __init__(self, judge_sleep: float = 0.01, warm_seconds: float = 0.0) -> None:
        import threading
        self.lock = threading.Lock()
        self.judging = self.warming = self.measuring = 0
        self.most_judging = 0
        self.overlaps: list[str] = []
        self.judged: list = []
        self.measured: list = []
        self.judge_sleep, self.warm_seconds = judge_sleep, warm_seconds

    def judge(self, config):
        import time as clock
        with self.lock:
            if self.measuring:
                self.overlaps.append(f"judged {config} during a measurement")
            self.judging += 1
            self.most_judging = max(self.most_judging, self.judging)
            self.judged.append(config)
        clock.sleep(self.judge_sleep)
        c = dict(config)
        wrong = c["FAST"] or c["X"] == 5
        with self.lock:
            self.judging -= 1
        return Judgement(Outcome.WRONG if wrong else Outcome.CORRECT,
                         ("PRC-01:below_working_precision",) if wrong else (), 0.5)

    def warm(self, config) -> float:
        import time as clock
        with self.lock:
            if self.measuring:
                self.overlaps.append(f"warmed {config} during a measurement")
            self.warming += 1
        clock.sleep(self.judge_sleep / 2)
        with self.lock:
            self.warming -= 1
        return self.warm_seconds

    def __call__(self, config):
        from kdiff.tune.timing import Timing
        with self.lock:
            if self.judging or self.warming or self.measuring:
                self.overlaps.append(f"measured {config} beside {self.judging} judges, "
                                     f"{self.warming} warm-ups, {self.measuring} measurements")
            self.measuring += 1
            self.measured.append(config)
        c = dict(config)
        seconds = (10.0 - c["X"] - 3 * c["FAST"]) * (1.0, 0.9, 1.2)[c["W"]]
        with self.lock:
            self.measuring -= 1
        return Timing(seconds, 0.25)


PARALLEL_SPACE = Space([Knob("X", tuple(range(6))), Knob("W", (0, 1, 2)),
                        Knob("FAST", (False, True))], (("X", 0), ("W", 0), ("FAST", False)))


def outcome_of(result):
    """Everything a search decides, the wall clock aside."""
    return ([(e.config, e.time, e.judgement, e.order, e.elapsed, e.time_error)
             for e in result.evaluations], result.default_time,
            result.chosen.config if result.chosen else None,
            result.chosen.judgement if result.chosen else None, result.history)


@pytest.mark.parametrize("method", ["grpo", "random", "exhaustive", "autotuner"])
def test_judges_side_by_side_give_the_serial_results(method):
    """--judges 3 evaluates what --judges 1 evaluates, in the same order, with the same
    outcomes, times, costs, pick and GRPO history (a group of 8: more than the judges);
    at most 3 judge at once (and some do), never during a measurement, and the budget
    holds for the evaluations, the judgements and the measurements."""
    budget = 20
    settings = GRPOSettings(group=8)
    runs = {}
    for judges in (1, 3):
        probe = Instrumented()
        result = run(method, PARALLEL_SPACE, probe.judge, probe, budget, seed=1,
                     settings=settings, judges=judges)
        runs[judges] = result
        assert probe.overlaps == []
        assert probe.most_judging <= judges
        # 36 configurations: the budget binds (GRPO may converge before it)
        assert len(result.evaluations) == budget or (
            method == "grpo" and 8 < len(result.evaluations) < budget)
        assert len(set(probe.judged)) <= budget and len(probe.measured) <= budget
        assert all(e.wall > 0 for e in result.evaluations)
        if judges > 1 and method != "autotuner":
            assert probe.most_judging > 1, "the batch was judged one at a time"
    assert outcome_of(runs[3]) == outcome_of(runs[1])
    if method == "grpo":
        assert len(runs[1].history) >= 2


def test_a_deadline_measures_the_batch_begun_and_begins_no_other():
    """The deadline passes while the batch's first configuration is measured: the others of
    that batch were judged already, so they are measured and counted too (nothing judged is
    thrown away), and no batch begins after; --judges 1 stops at the configuration being
    measured, and the parallel run's evaluations begin with the serial run's."""
    from kdiff.tune.search import Search, exhaustive, grpo
    for name in ("exhaustive", "grpo"):
        found = {}
        for judges in (1, 4):
            probe = Instrumented()
            search = Search(name, PARALLEL_SPACE, probe.judge, None, 30, judges=judges,
                            deadline=float("inf"))

            def timer(config, probe=probe, search=search):
                if len(probe.measured) == 1:  # the second measurement: time runs out
                    search.deadline = 0.0
                return probe(config)
            search.timer = timer
            result = (exhaustive(search) if name == "exhaustive"
                      else grpo(search, GRPOSettings(group=8), seed=0))
            assert len(set(probe.judged)) == len(result.evaluations)  # none judged, uncounted
            if judges == 1:
                assert len(result.evaluations) == 2
            elif name == "exhaustive":
                assert len(result.evaluations) == 1 + judges  # the default, then one batch
            else:
                assert 2 < len(result.evaluations) <= 1 + 8
            found[judges] = [e.config for e in result.evaluations]
        assert found[4][:2] == found[1]


def test_the_warm_up_is_counted_in_the_summed_cost():
    from kdiff.tune.search import Search
    probe = Instrumented(warm_seconds=2.0)
    search = Search("exhaustive", PARALLEL_SPACE, probe.judge, probe, 5, judges=2)
    first, second = search.evaluate_all(list(PARALLEL_SPACE)[:2])
    assert first.elapsed == pytest.approx(0.5 + 2.0 + 0.25)
    assert second.elapsed == pytest.approx(2 * (0.5 + 2.0 + 0.25))
    with pytest.raises(ValueError, match="budget"):
        search.evaluate_all(list(PARALLEL_SPACE)[2:6])  # 4 new, 3 left


def test_ctrl_c_during_a_batch_stops_the_judges_and_raises():
    """SIGINT while a batch is judged: the search stops the judge's and the timer's
    processes (stop()), measures nothing, and raises KeyboardInterrupt once the threads are
    done. The signal is sent from inside a judgement, so it lands while the batch runs."""
    import os
    import signal
    import threading

    from kdiff.tune.search import Search
    released = threading.Event()
    stopped = []

    class Judge:
        def __call__(self, config):
            if config != PARALLEL_SPACE.default:
                os.kill(os.getpid(), signal.SIGINT)
                assert released.wait(10), "never stopped"
            return Judgement(Outcome.CORRECT)

        def stop(self):
            stopped.append("judge")
            released.set()

    probe = Instrumented()
    search = Search("exhaustive", PARALLEL_SPACE, Judge(), probe, 10, judges=3)
    search.start()
    handler = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        search.evaluate_all(list(PARALLEL_SPACE)[1:4])
    assert stopped == ["judge"] and len(search.result.evaluations) == 1
    assert probe.measured == [PARALLEL_SPACE.default]
    assert signal.getsignal(signal.SIGINT) is handler


@pytest.mark.slow
def test_split_k_and_unmasked_loads_are_judged_before_they_are_timed(tmp_path):
    """The other kinds of switch a kernel exposes (kernels/tune_examples/split_sum_triton.py):
    a split-K whose floor division drops columns and loads without their mask are the
    fastest under the made-up timer; every configuration is judged, and the search returns
    the fastest correct one."""
    problem, candidate = EXAMPLE / "split_sum.py", EXAMPLE / "split_sum_triton.py"
    space = read_space(candidate)
    config = RunConfig(gates=["PRC-01"], gate_options=GateOptions(device="cpu"))
    judge = ConfigJudge(problem, candidate, space, config, tmp_path)

    def split_time(cfg) -> float:
        c = dict(cfg)
        return 1e-3 / (c["BLOCK"] * c["SPLIT"] * (1 if c["MASKED"] else 1.5))

    result = run("exhaustive", space, judge, injected(split_time), budget=12, seed=0)
    assert len(result.evaluations) == 12
    assert result.chosen.config == (("BLOCK", 32), ("SPLIT", 2), ("MASKED", True))
    for e in result.evaluations:
        c = dict(e.config)
        wrong = c["SPLIT"] == 3 or not c["MASKED"]
        assert (e.judgement.outcome is Outcome.WRONG) == wrong, (c, e.judgement)
        if wrong:
            assert any(f.startswith("PRC-01") for f in e.judgement.failing)
    assert result.rejected_among_fastest(4) == 4  # all faster than the best correct one


def test_a_configuration_whose_reference_breaks_a_judge_gets_its_verdict(tmp_path):
    """The reference asserts on the device for one draw (simulated on the CPU by its
    message): the tuner's judge goes on in a fresh judge without that draw, and the
    configuration gets the verdict it gets where the reference raises an ordinary error."""
    breaking = PROBLEM.read_text().replace(
        "        return x.sum(dim=-1)",
        "        if x.abs().max() > 1e30:\n"
        "            raise RuntimeError('CUDA error: device-side assert triggered')\n"
        "        return x.sum(dim=-1)")
    (tmp_path / "row_sum.py").write_text(breaking)
    space = read_space(CANDIDATE)
    config = RunConfig(gates=["PRC-03"], gate_options=GateOptions(device="cpu"))
    best = (("BLOCK", 64), ("ROWS", 1), ("ACC_FP16", False), ("num_warps", 4))
    judgement = ConfigJudge(tmp_path / "row_sum.py", CANDIDATE, space, config,
                            tmp_path)(best)
    assert judgement.outcome is Outcome.CORRECT, judgement
