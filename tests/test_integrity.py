"""Verdict integrity: the judge decides from what it checks itself, and nothing a candidate can
observe tells kdiff's calls from the benchmark's. One attacker per class (tests/hostile/), each
judged by the gates it tries to fool."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from kdiff.commands.run import judge_one
from kdiff.data.model import Case, Status, Verdict
from kdiff.data.provenance import Origin, ProvenanceKind
from kdiff.judging import plugins
from kdiff.judging.runconfig import RunConfig
from kdiff.sandbox import confine
from kdiff.sandbox.process import (
    MAX_ERROR_CHARS,
    CandidateCrashed,
    CandidateProcess,
    SandboxLimits,
)

HOSTILE = Path(__file__).parent / "hostile"


def _case(name: str, problem: Path = HOSTILE / "problem.py") -> Case:
    return Case(id=name, problem=problem, candidate=HOSTILE / f"{name}.py")


def _verdict(
    name: str, gates: list[str], problem: Path = HOSTILE / "problem.py", **limits
) -> Verdict:
    config = RunConfig(gates=gates, limits=SandboxLimits(call_timeout=30.0, **limits))
    return judge_one(_case(name, problem), config, plugins.manager(), "kernelbench")


def _failed(verdict: Verdict, gate: str, signature: str) -> str:
    result = verdict.gates[gate]
    assert (result.status, result.signature) == (Status.FAIL, signature), result
    return result.detail


def test_a_gates_request_is_not_in_the_candidates_frames():
    """Deterministic only while ORD-02's `churn`/`keep` is visible in its callers' frames."""
    verdict = _verdict("sniffs_request", ["ORD-02"])
    assert verdict.native.accept is True, verdict.native  # its noise is far below 1e-2
    _failed(verdict, "ORD-02", "nondeterministic")


@pytest.mark.parametrize("warm", [True, False], ids=["forked", "cold"])
def test_nothing_the_candidate_reads_says_kdiff(warm):
    """Correct only where its environment, arguments, command line, folder, log or module
    name say kdiff: judged, it is the wrong kernel it is everywhere else."""
    verdict = _verdict("knows_its_judge", ["ORD-02"], warm_start=warm)
    assert verdict.native.accept is False and "mismatch" in verdict.native.reason


def test_aliasing_is_judged_from_the_payload_not_the_workers_word():
    """Returns its input doubled in place and patches the worker's alias analysis."""
    verdict = _verdict("forges_aliasing", ["ORD-02"])
    assert verdict.native.accept is True, verdict.native
    assert "shares storage with input 0" in _failed(verdict, "ORD-02", "output_aliasing")


def test_inputs_changed_in_place_are_read_by_the_judge_not_from_the_reply():
    """Changes its input and sends a pristine copy of it back: on the CPU the judge reads the
    input's memory (the arena) itself. On CUDA the inputs after a call are the worker's word."""
    verdict = _verdict("forges_its_inputs", ["RES-01"])
    assert verdict.native.accept is True, verdict.native
    assert "input 0 modified in place" in _failed(verdict, "RES-01", "input_mutated")


def test_inputs_changed_only_when_handed_again_fail_cmp02():
    """RES-01's calls all have new tensors; CMP-02's kept ones come back: changed, they fail."""
    verdict = _verdict("mutates_kept_inputs", ["RES-01", "CMP-02"])
    assert verdict.native.accept is True, verdict.native
    assert verdict.gates["RES-01"].status is Status.PASS, verdict.gates["RES-01"]
    assert "modified in place" in _failed(verdict, "CMP-02", "input_mutated")


def test_inputs_written_after_the_call_returned_are_found_before_the_next_request():
    """Zeroes inputs the judge leaves in place while other requests run, and puts them back
    as a request that reads them arrives: the judge compares its memory with what it read
    back before every request it sends (on the CPU; on CUDA the inputs are the worker's word)."""
    verdict = _verdict("writes_kept_inputs_between_calls", ["CMP-02"])
    assert verdict.native.accept is True, verdict.native
    assert "changed after the call had returned" in _failed(verdict, "CMP-02", "input_mutated")


def test_a_hang_is_timed_against_the_reference_in_the_judge():
    """The reference's time that excuses a timeout as load is measured in the judge: the
    candidate's worker, which slows the reference there, cannot pass its hang off as load."""
    relu = Path(__file__).parents[1] / "kernels" / "KernelBench" / "level1" / "19_ReLU.py"
    case = Case(id="hides_hang_as_load", problem=relu, candidate=HOSTILE / "hides_hang_as_load.py")
    config = RunConfig(gates=["CMP-03"], limits=SandboxLimits(call_timeout=3.0))
    verdict = judge_one(case, config, plugins.manager(), "kernelbench")
    assert "again alone" in _failed(verdict, "CMP-03", "hang")


def test_a_cache_keyed_by_the_version_counter_fails_cmp02():
    """The kept tensors are overwritten through their memory, not by a torch write that moves
    their version counter: the cached answer is stale."""
    verdict = _verdict("caches_by_version", ["CMP-02"])
    assert verdict.native.accept is True, verdict.native
    _failed(verdict, "CMP-02", "stateful_cache")


def test_the_workers_overwrite_moves_no_version_counter():
    """Where the judge cannot write the kept tensors itself (CUDA), the worker writes them as
    the judge's arena write does: through their memory."""
    from kdiff.sandbox.worker import Worker

    worker, kept = Worker(), torch.zeros(2, 3).t()
    worker.stored_inputs["kept"] = [kept, 7]
    version = kept._version
    worker.cmd_overwrite_stored({"name": "kept", "values": [torch.ones(3, 2), None]})
    assert kept._version == version and bool((kept == 1).all())


def test_an_answer_that_holds_only_with_autograd_off_fails_cmp02():
    verdict = _verdict("knows_autograd_is_off", ["CMP-02"])
    assert verdict.native.accept is True, verdict.native
    assert "autograd on" in _failed(verdict, "CMP-02", "grad_mode_specialised")


def test_an_answer_wrong_with_autograd_on_but_on_cmp02s_fixed_draw_fails_its_chosen_one():
    """Wrong with autograd on except on draw B, the one input CMP-02 called with it on, at a
    seed fixed in kdiff's code (made beforehand with kdiff's own gate): every gate passed. That
    call is on a draw chosen for the verdict, new to the sequence, now."""
    verdict = _verdict("knows_the_judges_autograd_draw", ["CMP-02"])
    assert verdict.native.accept is True, verdict.native
    detail = _failed(verdict, "CMP-02", "grad_mode_specialised")
    assert "chosen for this verdict" in detail and "autograd on" in detail


def test_a_grid_that_covers_only_the_cpus_sizes_fails_at_the_next_size_up():
    """On the CPU held-out sizes stop at 2^16 elements an input; one size above the
    benchmark's per dimension may reach four times that, where the capped grid shows."""
    relu = Path(__file__).parents[1] / "kernels" / "KernelBench" / "level1" / "19_ReLU.py"
    case = Case(id="caps_its_grid", problem=relu, candidate=HOSTILE / "caps_its_grid.py")
    config = RunConfig(gates=["CMP-03"], limits=SandboxLimits(call_timeout=30.0))
    config.gate_options.device = "cpu"
    verdict = judge_one(case, config, plugins.manager(), "kernelbench")
    assert verdict.native.accept is True, verdict.native
    _failed(verdict, "CMP-03", "shape_specialised")


def test_a_negated_view_is_judged_as_it_reads():
    verdict = _verdict("negated_view", ["CMP-01"])
    assert verdict.native.accept is False, verdict.native
    _failed(verdict, "CMP-01", "distribution_dependent")


def test_a_buffer_reused_unless_the_last_answer_is_held_fails_ord02():
    """No call keeps outputs alive that another call does not: the reference count of the
    last answer tells no gate's call from another."""
    verdict = _verdict("reuses_unless_watched", ["ORD-02"])
    assert "an output of an earlier call" in _failed(verdict, "ORD-02", "output_aliasing")


def test_buffers_handed_out_in_turn_fail_ord02():
    """Two output buffers in turn: no output lies in the last call's, each in the one before;
    the candidate keeps that one alive, so the worker still sees it."""
    verdict = _verdict("alternates_buffers", ["ORD-02"])
    assert verdict.native.accept is True, verdict.native
    assert "an output of an earlier call" in _failed(verdict, "ORD-02", "output_aliasing")


def test_buffers_on_memory_the_candidate_keeps_fail_ord02():
    """Two bytearrays in turn, a fresh storage on one each call and the collector run first:
    no earlier output's storage object is alive, only its memory, which the worker holds."""
    verdict = _verdict("rings_foreign_buffers", ["ORD-02"])
    assert verdict.native.accept is True, verdict.native
    assert "an output of an earlier call" in _failed(verdict, "ORD-02", "output_aliasing")


def test_one_file_mapped_anew_each_call_fails_ord02():
    """A new mapping of one memfd each call: outputs at addresses of their own, all of them
    the same memory, which the worker finds by the file each one maps."""
    verdict = _verdict("maps_one_file_twice", ["ORD-02"])
    assert verdict.native.accept is True, verdict.native
    assert "an output of an earlier call" in _failed(verdict, "ORD-02", "output_aliasing")


def test_an_earlier_output_used_as_scratch_fails_ord02():
    """A fresh output each call, and the last one handed out used as the next call's scratch:
    no output lies in an earlier one's storage, but a caller keeping `a = m(x1)` finds it
    changed by `m(x2)`. The worker compares the bytes of the earlier outputs still alive."""
    verdict = _verdict("scribbles_on_earlier_outputs", ["ORD-02"])
    assert verdict.native.accept is True, verdict.native
    detail = _failed(verdict, "ORD-02", "output_aliasing")
    assert "changed after they were handed out" in detail


def test_a_reply_without_the_kept_inputs_is_refused():
    """Writes into a tensor handed again, and drops the inputs from the reply to every call on
    the kept tensors: the judge's own reading of them, paired with the reply's item by item,
    was dropped with them. A reply must give back as many inputs as the kept set holds."""
    verdict = _verdict("hides_writes_to_kept_inputs", ["CMP-02"])
    assert verdict.native.accept is True, verdict.native
    assert "0 inputs back, 1 sent" in _failed(verdict, "CMP-02", "unusable_output")


def test_a_failure_reply_without_an_error_is_the_candidates_crash():
    """Every call answered `{"ok": False}`, with no error to read: the judge's KeyError made
    the case kdiff's failure, with no verdict; the reply's form is checked before it is read."""
    verdict = _verdict("forges_a_failure_reply", ["CMP-01"])
    assert verdict.error is None, verdict.error
    assert verdict.native.accept is False and "malformed reply" in verdict.native.reason
    assert "malformed reply to `call`" in _failed(verdict, "CMP-01", "crash")


def test_shared_mappings_of_one_file_are_one_memory_and_private_ones_are_not():
    import mmap

    from kdiff.sandbox.mappings import memory_of

    fd = os.memfd_create("kdiff-test")
    os.ftruncate(fd, mmap.PAGESIZE)
    maps = [
        mmap.mmap(fd, mmap.PAGESIZE),
        mmap.mmap(fd, mmap.PAGESIZE),
        mmap.mmap(fd, mmap.PAGESIZE, flags=mmap.MAP_PRIVATE),
    ]
    spans = [
        (t.data_ptr(), t.data_ptr() + 64)
        for t in (torch.frombuffer(m, dtype=torch.uint8) for m in maps)
    ]
    first, second, private = memory_of(spans, [True] * 3)
    assert first.span != second.span and first.overlaps(second)
    assert private.file is None and not private.overlaps(first)
    assert memory_of(spans[:1], [False])[0].file is None  # torch's own: its address names it
    os.close(fd)


FRESH_FOREIGN_MEMORY = """
import numpy as np
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.from_numpy(x.numpy() * np.float32(2))
"""


def test_fresh_foreign_memory_each_call_is_no_reuse(tmp_path):
    """Memory torch did not allocate, new each call (numpy's), is held by the worker, never
    handed out again while it watches: no output is taken for an earlier call's."""
    candidate = tmp_path / "fresh_numpy.py"
    candidate.write_text(FRESH_FOREIGN_MEMORY)
    config = RunConfig(gates=["ORD-02"], limits=SandboxLimits(call_timeout=30.0))
    verdict = judge_one(
        Case(id="fresh_numpy", problem=HOSTILE / "problem.py", candidate=candidate),
        config,
        plugins.manager(),
        "kernelbench",
    )
    assert verdict.gates["ORD-02"].status is Status.PASS, verdict.gates["ORD-02"]


def test_a_kernel_that_knows_every_fixed_draw_fails_cmp01s_draw_chosen_per_verdict():
    """Exact on every draw kdiff's gates make from their fixed seeds (it makes them first with
    kdiff's own code), 2.5 x on anything else: it passed every gate. CMP-01's draw at a seed
    chosen when the gate runs is one no table made beforehand holds."""
    verdict = _verdict("knows_the_judges_draws", ["CMP-01"])
    assert verdict.native.accept is True, verdict.native
    assert "chosen for this verdict" in _failed(verdict, "CMP-01", "distribution_dependent")


def test_a_kernel_right_only_at_the_judges_sizes_fails_cmp03s_size_chosen_per_verdict():
    """Lists the shapes CMP-03 tries by running its trials with no candidate, and leaves the
    last column unwritten at any other: it passed every gate. The size chosen when the gate
    runs is one it could not list."""
    relu = Path(__file__).parents[1] / "kernels" / "KernelBench" / "level1" / "19_ReLU.py"
    verdict = _verdict("knows_the_judges_sizes", ["CMP-03"], problem=relu)
    assert verdict.native.accept is True, verdict.native
    assert "chosen for this verdict" in _failed(verdict, "CMP-03", "shape_specialised")


def test_a_kernel_wrong_only_at_larger_sizes_it_was_not_shown_fails_cmp03s_chosen_one():
    """Lists the shapes CMP-03 tries as knows_the_judges_sizes does, and leaves the last column
    unwritten at any other shape larger than the benchmark's: it passed every gate while the
    only size chosen per verdict lay below the benchmark's. One above it is chosen now."""
    relu = Path(__file__).parents[1] / "kernels" / "KernelBench" / "level1" / "19_ReLU.py"
    verdict = _verdict("knows_the_judges_larger_sizes", ["CMP-03"], problem=relu)
    assert verdict.native.accept is True, verdict.native
    assert "chosen for this verdict" in _failed(verdict, "CMP-03", "shape_specialised")


def test_a_kernel_wrong_where_two_sizes_change_together_fails_cmp03s_chosen_odd_sizes():
    """Right wherever its input leaves the benchmark's shape in one dimension at most, and at
    CMP-03's "all sizes odd" shape, the only trial that changes every dimension at once, at
    sizes fixed in kdiff's code (half of each, made odd); it leaves the last column unwritten
    anywhere else: accepted by every gate. Those sizes are chosen per verdict now."""
    relu = Path(__file__).parents[1] / "kernels" / "KernelBench" / "level1" / "19_ReLU.py"
    verdict = _verdict("knows_the_judges_joint_sizes", ["CMP-03"], problem=relu)
    assert verdict.native.accept is True, verdict.native
    detail = _failed(verdict, "CMP-03", "shape_specialised")
    assert "chosen for this verdict" in detail and "all sizes odd" in detail, detail


def test_a_kernel_that_ignores_layouts_it_was_not_shown_fails_cmp03s_chosen_draws():
    """Reads its input as one block from its storage's start, strides and offset ignored,
    except on the values CMP-03 hands over transposed or at an offset (made beforehand with
    kdiff's own gate): no other gate hands over such a layout, and every gate passed. Those
    trials draw at seeds chosen for the verdict now."""
    verdict = _verdict("knows_the_judges_layouts", ["CMP-03"])
    assert verdict.native.accept is True, verdict.native
    detail = _failed(verdict, "CMP-03", "noncontiguous_unsupported")
    assert "chosen for this verdict" in detail and "offset_unsupported" in detail


# recovers_the_chosen_seed solves for a Mersenne Twister state in torch operators at every
# call, which the provenance trace of the gates' calls follows one by one: about a minute.
@pytest.mark.parametrize("kernel", ["knows_the_judges_regimes", pytest.param(
    "recovers_the_chosen_seed", marks=pytest.mark.slow)])
def test_a_kernel_wrong_only_in_the_other_gates_regimes_fails_their_chosen_draws(kernel):
    """Exact on CMP-01's distributions, wrong on any draw of ORD-01's, PRC-03's and EXC-02's
    regimes it did not make beforehand: it passed all four while those three drew at fixed
    seeds alone. Each now draws once more at a seed no table made beforehand holds.
    `recovers_the_chosen_seed` also finds the seed torch drew the first chosen draw it is shown
    from (the suite pins the verdict's secret inside the range it searches) and makes every
    other chosen draw with it: it passed all four while every chosen draw came from that one
    seed. Each chosen draw now sets its generator's whole state from a seed of its own,
    derived from the verdict's secret by a keyed hash."""
    verdict = _verdict(kernel, ["CMP-01", "ORD-01", "PRC-03", "EXC-02"])
    assert verdict.native.accept is True, verdict.native
    assert verdict.gates["CMP-01"].status is Status.PASS, verdict.gates["CMP-01"]
    assert "chosen for this verdict" in _failed(verdict, "ORD-01", "order_error")
    assert "chosen for this verdict" in _failed(verdict, "PRC-03", "range_inaccurate")
    assert "chosen for this verdict" in _failed(verdict, "EXC-02", "subnormal_flushed")


def test_the_reports_rewritten_during_a_verdict_withhold_its_secret(tmp_path):
    """`kdiff verify --json` rewrites its report after each gate, where the worker can read it:
    EXC-02's labels named the verdict's secret, and a kernel wrong on ORD-01's log-uniform
    draws made ORD-01's chosen ones from it and answered them exactly. The reports written
    while the candidate runs withhold the secret; the complete one names it."""
    from kdiff.commands.cli import main

    tmp_path.chmod(0o755)  # where any user reads, as a run's folder usually is
    for name in ("problem.py", "knows_the_judges_regimes.py", "reads_its_verdict_so_far.py"):
        shutil.copy(HOSTILE / name, tmp_path / name)
    report = tmp_path / "verdict.json"
    main(
        [
            "verify",
            "--problem",
            str(tmp_path / "problem.py"),
            "--candidate",
            str(tmp_path / "reads_its_verdict_so_far.py"),
            "--gates",
            "EXC-02,ORD-01",
            "--device",
            "cpu",
            "--json",
            str(report),
            "--call-timeout",
            "30",
        ]
    )
    gates = json.loads(report.read_text())["kernels"][0]["gates"]
    assert (gates["EXC-02"]["status"], gates["ORD-01"]["status"]) == ("pass", "fail"), gates
    assert gates["ORD-01"]["signature"] == "order_error"
    assert "(chosen for this verdict)" in gates["ORD-01"]["detail"]
    assert "withheld" not in report.read_text()


def test_a_kernel_that_loses_special_values_it_was_not_shown_fails_exc01s_chosen_draws():
    """Doubles, and turns NaN and +-Inf into finite values in any input it did not make
    beforehand with kdiff's own constants: EXC-01, the only gate that injects them, drew at
    fixed seeds alone, and every gate passed. Each injection is now drawn once more at a seed
    chosen for the verdict."""
    verdict = _verdict("knows_the_judges_injections", ["EXC-01"])
    assert verdict.native.accept is True, verdict.native
    assert "chosen for this verdict" in _failed(verdict, "EXC-01", "nan_swallowed")


def test_a_kernel_below_precision_on_recasts_it_was_not_shown_fails_prc01s_chosen_draws():
    """Right in fp32, rounded through fp8 on any bf16 recast it did not make beforehand with
    kdiff's own PRC-01: the only gate that draws the recast drew it at fixed seeds alone, and
    every gate passed. Each recast is now drawn once more at a seed chosen for the verdict."""
    problem = Path(__file__).parent / "fixtures" / "precision" / "bf16_recast_problem.py"
    verdict = _verdict("knows_the_judges_recasts", ["PRC-01"], problem=problem)
    assert verdict.native.accept is True, verdict.native
    detail = _failed(verdict, "PRC-01", "below_working_precision")
    assert "chosen for this verdict" in detail and "[bfloat16]" in detail


def test_a_kernel_below_precision_that_launches_a_triton_kernel_still_fails_prc01():
    """Rounds its bf16 recast through fp8 in torch, and launches a Triton kernel that computes
    nothing the answer uses: on the CPU, PRC-01 left every bf16 trial of a candidate whose
    worker reported a Triton launch to CUDA, and the gate passed on its fp32 trials. A bf16
    answer beyond what bf16 arithmetic allows in any order of rounding is judged now."""
    problem = Path(__file__).parent / "fixtures" / "precision" / "bf16_recast_problem.py"
    verdict = _verdict("claims_triton_for_its_bf16", ["PRC-01"], problem=problem)
    assert verdict.native.accept is True, verdict.native
    assert "[bfloat16]" in _failed(verdict, "PRC-01", "below_working_precision")


def test_a_tile_whose_file_will_not_import_in_res02s_compiler_leaves_res02_undecided():
    """The red team's 128 x 1024 tile (tmem_over_budget on sm_100), in a file no module of the
    judge's can be built from and that raises on import where Triton's interpreter is off, as
    in RES-02's compiler child alone: its compile failed there, the launch was "not measured",
    and RES-02 passed. A failure to compile that only the kernel's own module reports is its
    word, as a fit is: the gate is undecided, the verdict open."""
    problem = Path(__file__).parents[1] / "kernels" / "KernelBench" / "level1"
    case = _case("hides_its_tile_from_the_compiler", problem / "40_Matmul_wide_output.py")
    config = RunConfig(gates=["RES-02"], limits=SandboxLimits(call_timeout=30.0))
    # v0.1's tolerance, as tests/test_gate_res02.py judges the tile: its TF32 product is PRC-01's
    verdict = judge_one(case, config, plugins.manager(), "kernelbench-v0.1")
    assert verdict.native.accept is True, verdict.native
    result = verdict.gates["RES-02"]
    assert result.status is Status.ERROR, result
    assert "only the kernel's own module reported" in result.detail, result.detail
    assert verdict.verifier_accept is None


def test_a_kernel_wrong_on_long_rows_it_was_not_shown_fails_prc02s_chosen_draws():
    """A row sum whose one block covers 2^11 columns, exact on the long rows it made
    beforehand with kdiff's own PRC-02: the only gate that builds a reduction that long drew
    it at a fixed seed alone, and every gate passed. Each draw is now made once more at a seed
    chosen for the verdict."""
    problem = Path(__file__).parent / "fixtures" / "core" / "scale_sum.py"
    verdict = _verdict("knows_the_judges_reductions", ["PRC-02"], problem=problem)
    assert verdict.native.accept is True, verdict.native
    assert "chosen for this verdict" in _failed(verdict, "PRC-02", "low_precision_accumulator")


def test_a_kernel_wrong_on_long_rows_of_lengths_it_was_not_shown_fails_prc02s_chosen_one():
    """The same one-block row sum, right on every row of the length PRC-02 grows the problem
    to (found beforehand with kdiff's own gate), whatever its values: every gate passed while
    that length was fixed. PRC-02's chosen draws are made at a grown size chosen for the
    verdict too."""
    problem = Path(__file__).parent / "fixtures" / "core" / "scale_sum.py"
    verdict = _verdict("knows_the_judges_reduction_lengths", ["PRC-02"], problem=problem)
    assert verdict.native.accept is True, verdict.native
    assert "chosen for this verdict" in _failed(verdict, "PRC-02", "low_precision_accumulator")


def test_a_kernel_deterministic_only_on_ord02s_fixed_draw_fails_its_chosen_draw():
    """One ulp off at random on every call but on the benchmark draw ORD-02 repeated, at a
    seed fixed in kdiff's code: within every value bound, and ORD-02 passed. ORD-02 runs the
    benchmark's get_inputs() at the verdict's chosen seed now."""
    verdict = _verdict("knows_the_judges_determinism", ["CMP-01", "ORD-02"])
    assert verdict.native.accept is True, verdict.native
    assert verdict.gates["CMP-01"].status is Status.PASS, verdict.gates["CMP-01"]
    assert "chosen for this verdict" in _failed(verdict, "ORD-02", "nondeterministic")


def test_a_kernel_exact_only_after_the_allocator_churn_fails_ord02s_first_run():
    """One ulp off at random on every call but those the worker churned its allocator before,
    which it learns by wrapping the worker's churn function, whatever the churn's seed: every
    ORD-02 run churned, and every gate passed. ORD-02's first run is made without churn."""
    verdict = _verdict("exact_only_after_churn", ["CMP-01", "ORD-02"])
    assert verdict.native.accept is True, verdict.native
    assert verdict.gates["CMP-01"].status is Status.PASS, verdict.gates["CMP-01"]
    assert "differs from run 0" in _failed(verdict, "ORD-02", "nondeterministic")


def test_a_kernel_that_carries_the_judges_instances_parameters_fails_cmp02s_chosen_one():
    """Ignores its instance's parameters for those of the reference built at the benchmark's
    seed and at CMP-02's fixed seeds (made beforehand with kdiff's own code), the nearest to its
    own: every gate passed while each instance a judge built was one of those. CMP-02 builds
    one more at a seed chosen for the verdict."""
    problem = Path(__file__).parent / "fixtures" / "core" / "scale_sum.py"
    verdict = _verdict("knows_the_judges_instances", ["CMP-02"], problem=problem)
    assert verdict.native.accept is True, verdict.native
    assert "chosen for this verdict" in _failed(verdict, "CMP-02", "seed_specialised")


def test_a_kernel_that_skips_parameters_built_as_ones_fails_cmp02s_other_instances():
    """LayerNorm's weight is built as ones and its bias as zeros at every seed: a kernel that
    skips its affine was right on every instance a judge built (all twelve gates passed). An
    instance at another seed than the benchmark's now holds its trainable parameters redrawn;
    the honest control, which reads them, passes there."""
    kernels = Path(__file__).parents[1] / "kernels"
    problem = kernels / "KernelBench" / "level1" / "4_LayerNorm.py"
    skips = _verdict("skips_its_initial_parameters", ["CMP-02"], problem=problem)
    assert skips.native.accept is True, skips.native
    assert "seed 42 was answered correctly" in _failed(skips, "CMP-02", "seed_specialised")
    control = Case(id="control", problem=problem,
                   candidate=kernels / "runs" / "controls" / "level_1_problem_4_sample_0_kernel.py")
    honest = judge_one(control, RunConfig(gates=["CMP-02"]), plugins.manager(), "kernelbench")
    assert honest.native.accept is True and honest.verifier_accept is True, honest.gates


def test_a_kernel_that_writes_into_inputs_it_was_not_shown_fails_res01s_chosen_draws():
    """Doubles its input in place (returning a copy) except on the draws of the only calls
    whose inputs are read back, RES-01's and CMP-02's kept tensors (made beforehand with kdiff's
    own gates): every gate passed while those drew at fixed seeds alone. RES-01 now judges
    both its input sets at seeds chosen for the verdict."""
    verdict = _verdict("knows_the_judges_hygiene_draws", ["RES-01"])
    assert verdict.native.accept is True, verdict.native
    assert "chosen for this verdict" in _failed(verdict, "RES-01", "input_mutated")


def test_a_kernel_that_writes_into_kept_tensors_it_was_not_shown_fails_cmp02s_chosen_draws():
    """Writes into a tensor it is handed again unless it holds a draw CMP-02 makes at a fixed
    seed (made beforehand with kdiff's own gate): CMP-02's kept tensors are the only ones handed
    again, and every gate passed. The draws they first hold are now chosen for the verdict."""
    verdict = _verdict("knows_the_judges_kept_draws", ["CMP-02"])
    assert verdict.native.accept is True, verdict.native
    assert "chosen for this verdict" in _failed(verdict, "CMP-02", "input_mutated")


def test_a_kernel_that_leaks_on_inputs_it_was_not_shown_fails_res02s_chosen_draws():
    """Keeps every output it hands out except on the draws RES-02, the only gate that measures
    memory across calls, made at fixed seeds (made beforehand with kdiff's problem loader):
    every gate passed. RES-02 draws its calls' inputs at seeds chosen for the verdict now."""
    verdict = _verdict("knows_the_judges_resource_draws", ["RES-02"])
    assert verdict.native.accept is True, verdict.native
    assert "chosen for this verdict" in _failed(verdict, "RES-02", "memory_leak")


def test_library_work_in_a_thread_the_call_joins_is_the_calls():
    """A Triton kernel of its own that copies, torch doing the doubling in a thread the call
    joins: provenance said `own` while dispatch modes traced the calling thread alone."""
    provenance = _verdict("computes_in_a_thread", ["ORD-02"]).provenance
    assert provenance.kind is not ProvenanceKind.OWN, provenance
    assert any(
        k.name == "aten.mul.Tensor" and k.origin is Origin.LIBRARY for k in provenance.kernels
    ), provenance


def test_library_work_in_a_raw_thread_the_call_waits_for_is_the_calls():
    """The same, its thread started with `_thread.start_new_thread`: provenance said `own`
    while the trace ran in `threading.Thread`s alone."""
    provenance = _verdict("computes_in_a_raw_thread", ["ORD-02"]).provenance
    assert provenance.kind is not ProvenanceKind.OWN, provenance
    assert any(
        k.name == "aten.mul.Tensor" and k.origin is Origin.LIBRARY for k in provenance.kernels
    ), provenance


def test_a_kernel_that_reads_from_its_storage_start_fails_cmp03():
    """Fresh inputs start where their storage does; CMP-03 also hands them over as a slice."""
    case = Case(
        id="reads_from_storage_start",
        problem=HOSTILE / "problem.py",
        candidate=HOSTILE / "reads_from_storage_start.py",
    )
    verdict = judge_one(case, RunConfig(gates=["CMP-03"]), plugins.manager(), "kernelbench")
    assert verdict.native.accept is True, verdict.native
    assert "storage offset" in _failed(verdict, "CMP-03", "offset_unsupported")


@pytest.mark.gpu
def test_an_input_at_a_storage_offset_keeps_its_layout_on_the_device():
    from kdiff.numerics.inputs import at_offset
    from kdiff.sandbox.worker import on_device

    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    x = at_offset(torch.randn(3, 5))
    moved = on_device(x, "cuda")
    assert moved.storage_offset() == x.storage_offset() and torch.equal(moved.cpu(), x)
    t = on_device(torch.randn(5, 3).t(), "cuda")
    assert t.stride() == (1, 3)


def test_an_output_of_another_dtype_fails_every_gate():
    """The values are right; the dtype is part of the contract, as the shape is."""
    gates = ["CMP-01", "ORD-02", "RES-01", "PRC-03"]
    verdict = _verdict("widens_output", gates)
    assert verdict.native.accept is False and "dtype" in verdict.native.reason
    for gate in gates:
        assert "dtype torch.float64" in _failed(verdict, gate, "output_mismatch")


def test_unencodable_text_from_a_worker_reaches_no_report_or_store(tmp_path, capsys):
    """The worker's message is made encodable where the judge reads it: the run, its store
    and every report of it work, and the kernel is rejected for raising."""
    from kdiff.commands.cli import main

    root = tmp_path / "kb"
    shutil.copytree(HOSTILE.parent / "fixtures" / "kernelbench_checkout", root)
    runs = root / "runs" / "hostile"
    runs.mkdir(parents=True)
    shutil.copy(HOSTILE / "raises_unencodable.py", runs / "level_1_problem_1_sample_0_kernel.py")
    store, out = tmp_path / "s.sqlite", tmp_path / "r"
    args = [
        "--root",
        str(root),
        "--runs",
        str(runs),
        "--store",
        str(store),
        "--gates",
        "CMP-01",
        "--device",
        "cpu",
        "--fail-on",
        "never",
    ]
    assert main(["run", "--bench", "kernelbench", *args]) == 0
    assert (
        main(
            [
                "report",
                "--store",
                str(store),
                "--markdown",
                f"{out}.md",
                "--junit",
                f"{out}.xml",
                "--json",
                f"{out}.json",
                "--fail-on",
                "never",
            ]
        )
        == 0
    )
    shown = capsys.readouterr().out
    shown.encode("utf-8")
    assert "\x1b" not in shown and "  verifier: accept" not in shown.splitlines()
    kernel = json.loads(Path(f"{out}.json").read_text())["kernels"][0]
    assert kernel["verifier_accept"] is False and "?" in kernel["gates"]["CMP-01"]["detail"]
    import xml.etree.ElementTree as ET

    assert ET.parse(f"{out}.xml").getroot().find("testsuite") is not None
    Path(f"{out}.md").read_text(encoding="utf-8")


def test_launches_hidden_from_the_recorder_are_suspect():
    verdict = _verdict("hides_launches", ["RES-02"])
    assert "double_kernel" in _failed(verdict, "RES-02", "launches_hidden")


def test_a_leak_hidden_from_the_workers_count_shows_in_its_resident_memory():
    verdict = _verdict("hides_leak", ["RES-02"])
    assert "resident memory" in _failed(verdict, "RES-02", "memory_leak")


def test_a_reply_that_repeats_its_storage_is_refused_before_use():
    """torch.zeros(1).expand(2**29): 4 bytes of storage, 2 GiB once materialised."""
    with CandidateProcess(
        HOSTILE / "problem.py",
        HOSTILE / "reply_bomb.py",
        limits=SandboxLimits(max_reply_bytes=64 << 20),
    ) as worker:
        worker.request("build", key="c", role="candidate", seed=0, dtype="float32", init_inputs=[])
        with pytest.raises(CandidateCrashed, match="views repeating their storage"):
            worker.request("call", key="c", inputs=[torch.randn(4, 8)])


def test_a_reply_whose_storages_overlap_is_refused_before_any_is_copied():
    """One 4 MiB body named by 64 storages: each would be a copy of its own."""
    with CandidateProcess(HOSTILE / "problem.py", HOSTILE / "repeats_storages.py") as worker:
        worker.request("build", key="c", role="candidate", seed=0, dtype="float32", init_inputs=[])
        with pytest.raises(CandidateCrashed, match="not where the last one ended"):
            worker.request("call", key="c", inputs=[torch.randn(4, 8)])


_JUDGE = """
import json, resource, sys
from pathlib import Path
from kdiff.judging import plugins
from kdiff.data.model import Case
from kdiff.commands.run import judge_one
from kdiff.judging.runconfig import RunConfig
folder, gates = Path(sys.argv[1]), sys.argv[2].split(",")
verdicts, peaks = {}, {}
for name in sys.argv[3:]:
    verdicts[name] = judge_one(Case(id=name, problem=folder / "problem.py",
                                    candidate=folder / f"{name}.py"),
                               RunConfig(gates=gates), plugins.manager(), "kernelbench").to_json()
    peaks[name] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss << 10  # peak so far
print(json.dumps({"verdicts": verdicts, "peak_bytes": peaks}))
"""


@pytest.fixture(scope="module")
def fresh_judge() -> dict:
    """A judge of its own, started with a secret in its environment (so that its
    /proc/<pid>/environ holds it), whose peak memory is its own: it judges the secret thief
    and the reply bomb."""
    done = subprocess.run(
        [sys.executable, "-c", _JUDGE, str(HOSTILE), "ORD-02", "steals_secrets", "reply_bomb"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "SECRET_TOKEN": "hunter2"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_judges_secrets_stay_in_the_judge(fresh_judge):
    """The worker neither inherits the judge's secret nor reads it from any process it can
    see (/proc/*/environ, the judge's among them)."""
    if confine.landlock_abi() < 1:
        pytest.skip("without Landlock a worker may read its own user's /proc/<pid>/environ")
    native = fresh_judge["verdicts"]["steals_secrets"]["native"]
    assert native["accept"] is True, native["reason"]


def test_the_judges_memory_is_bounded_by_what_a_reply_covers(fresh_judge):
    """The stride-0 reply fails on its shape; the judge never materialises its 2 GiB. The
    judge's peak after judging the bomb against its peak after judging a kernel before it
    (torch, CUDA's libraries where they load, the problem, the oracle on 4 x 8 inputs: about
    0.4 GiB on the CPU, 1 GiB on the H200): one materialised copy of the reply alone would add
    2 GiB (before the fix the judge reached 4.3 GiB); half of that is the bound."""
    gates = fresh_judge["verdicts"]["reply_bomb"]["gates"]
    assert all(g["signature"] == "output_mismatch" for g in gates.values()), gates
    peaks = fresh_judge["peak_bytes"]
    assert peaks["reply_bomb"] - peaks["steals_secrets"] < 1 << 30, peaks


def _network_namespaces_granted() -> bool:
    probe = (
        "import ctypes; libc = ctypes.CDLL(None); "
        f"raise SystemExit(libc.unshare({confine.CLONE_NEWUSER}) != 0 "
        f"or libc.unshare({confine.CLONE_NEWNET}) != 0)"
    )
    return subprocess.run([sys.executable, "-c", probe]).returncode == 0


def test_no_datagram_leaves_the_worker(tmp_path):
    """UDP, which Landlock does not restrict, is contained by a network namespace with no
    interface up, where the kernel grants one."""
    folder = tmp_path / "kernels"
    shutil.copytree(HOSTILE, folder)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.settimeout(0.5)
        (folder / "hostile.json").write_text(json.dumps({"udp_port": listener.getsockname()[1]}))
        with CandidateProcess(folder / "problem.py", folder / "udp_leak.py") as worker:
            worker.request(
                "build", key="c", role="candidate", seed=0, dtype="float32", init_inputs=[]
            )
            if not _network_namespaces_granted():
                pytest.skip("this kernel grants no unprivileged network namespace")
            assert "net-namespace" in worker.containment
            # No interface up (unreachable), or, under a uid of its own, no IP socket at all.
            with pytest.raises(Exception, match="unreachable|PermissionError"):
                worker.request("call", key="c", inputs=[torch.randn(4, 8)])
        with pytest.raises(socket.timeout):
            listener.recv(1 << 16)


def test_a_kernel_that_notices_the_poison_gains_nothing():
    """Honest under RES-01's visibly patched torch.empty, stale (the reference's last answer)
    elsewhere: the decoy call, unpoisoned like the native check's, shows it."""
    verdict = _verdict("notices_poison", ["RES-01"])
    assert verdict.native.accept is True, verdict.native
    assert "on other inputs" in _failed(verdict, "RES-01", "allocator_history")


def test_the_judge_reads_a_sources_triton_launches_itself():
    """Kernels launched with kernel[grid](...), autotuned or not; not device helpers."""
    from kdiff.gates.res02_resources import triton_launch_sites

    source = """
import triton
@triton.jit
def helper(x):
    return x * 2
@triton.autotune(configs=[], key=["n"])
@triton.jit
def tuned(x_ptr, n):
    helper(x_ptr)
@triton.jit
def plain(x_ptr):
    pass
@triton.jit
def never_launched(x_ptr):
    pass
def launch(x):
    tuned[(1,)](x, 1)
    plain[lambda meta: (1,)](x)
"""
    assert triton_launch_sites(source) == ["plain", "tuned"]


REUSED_BUFFER = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        if not hasattr(self, "out"):
            self.out = torch.empty_like(x)
        return torch.mul(x, 2, out=self.out)
"""


def test_an_output_reused_by_a_later_call_is_seen_in_the_payload(tmp_path):
    """The worker keeps each call's outputs alive through the next, in every call alike: an
    output in their storage is seen, whatever the candidate counts of its references."""
    candidate = tmp_path / "reused.py"
    candidate.write_text(REUSED_BUFFER)
    config = RunConfig(gates=["ORD-02"], limits=SandboxLimits(call_timeout=30.0))
    verdict = judge_one(
        Case(id="reused", problem=HOSTILE / "problem.py", candidate=candidate),
        config,
        plugins.manager(),
        "kernelbench",
    )
    assert "an output of an earlier call" in _failed(verdict, "ORD-02", "output_aliasing")


def test_a_kernel_that_writes_inputs_no_gate_reads_back_fails_where_it_writes():
    """Zeroes its input in every call but RES-01's and CMP-02's kept ones, which it tells
    apart by the request its worker is sent: only those gates compared inputs after a call.
    Every other call's inputs are compared by the judge now (its own reading of the arena)."""
    verdict = _verdict("writes_inputs_no_gate_reads", ["CMP-01"])
    assert verdict.native.accept is True, verdict.native
    assert "modified in place by a call" in _failed(verdict, "CMP-01", "input_mutated")


def test_the_judges_command_line_withholds_the_chosen_seed(tmp_path):
    """A user draws a verdict again with `--chosen-seed N`; the kernel reads N in the judge's
    /proc/<pid>/cmdline, which any process reads, and makes ORD-01's chosen draws with it.
    The judge's command line leaves the option out once parsed."""
    for name in ("problem.py", "knows_the_judges_regimes.py", "reads_the_judges_command_line.py"):
        shutil.copy(HOSTILE / name, tmp_path / name)
    report = tmp_path / "verdict.json"
    done = subprocess.run(
        [sys.executable, "-m", "kdiff", "verify", "--problem", str(tmp_path / "problem.py"),
         "--candidate", str(tmp_path / "reads_the_judges_command_line.py"), "--gates",
         "ORD-01", "--device", "cpu", "--json", str(report), "--call-timeout", "30",
         "--chosen-seed", "1234567"],
        capture_output=True, text=True, timeout=600,
    )
    assert report.exists(), done.stderr[-2000:]
    gate = json.loads(report.read_text())["kernels"][0]["gates"]["ORD-01"]
    assert (gate["status"], gate["signature"]) == ("fail", "order_error"), gate


_CLOSED_JUDGE = """
import ctypes, os, sys
from kdiff.sandbox.process import judge_folder
from kdiff.sandbox.visibility import PR_SET_DUMPABLE
os.setgid(65534); os.setuid(65534)  # a judge that is not root: its workers have its uid
ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # as one started by that user is
if sys.argv[1] == "judge":
    judge_folder()  # what a judge does before its first worker
pid = os.fork()
if pid == 0:  # a worker of its uid with neither Landlock nor a PID namespace (CUDA's)
    try:
        with open(f"/proc/{os.getppid()}/environ", "rb") as f:
            os._exit(3 if b"KDIFF_CHOSEN_SEED=" in f.read() else 0)
    except PermissionError:
        os._exit(0)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="makes a judge of another uid")
def test_a_worker_of_the_judges_uid_cannot_read_its_environment():
    """A CUDA worker under a judge that is not root runs as the judge's uid without Landlock
    or a PID namespace: it read the judge's /proc/<pid>/environ (KDIFF_CHOSEN_SEED, the
    verdict's secret) and memory. A judge closes them before its first worker."""
    env = {**os.environ, "KDIFF_CHOSEN_SEED": "1234567"}
    run = [sys.executable, "-c", _CLOSED_JUDGE]
    assert subprocess.run([*run, "bare"], env=env, timeout=60).returncode == 3  # the attack
    assert subprocess.run([*run, "judge"], env=env, timeout=60).returncode == 0


def test_a_kernel_exact_when_its_request_names_churn_fails_ord02():
    """Exact only on calls whose request names the allocator churn, which ORD-02's first run
    did with `churn=False`; noisy everywhere else. Run 0's request now names none."""
    verdict = _verdict("exact_when_told_of_churn", ["CMP-01", "ORD-02"])
    assert verdict.native.accept is True, verdict.native
    assert verdict.gates["CMP-01"].status is Status.PASS, verdict.gates["CMP-01"]
    assert "differs from run 0" in _failed(verdict, "ORD-02", "nondeterministic")


def test_a_kernel_exact_at_ord02s_place_in_the_schedule_fails_ord02():
    """One ulp off at random except on churned calls and on the plain call at the place ORD-02
    made its first run (counted beforehand: the schedule is the same in every verdict of a
    problem and gate set). The first run is now an earlier gate's call, chosen by the secret."""
    verdict = _verdict("knows_ord02s_place", ["CMP-01", "ORD-02"])
    assert verdict.native.accept is True, verdict.native
    assert verdict.gates["CMP-01"].status is Status.PASS, verdict.gates["CMP-01"]
    detail = _failed(verdict, "ORD-02", "nondeterministic")
    assert "an earlier call" in detail and "differs from run 0" in detail


def test_a_kernel_that_scribbles_on_earlier_outputs_after_ord02_fails_where_it_does():
    """Uses the output it handed out last as scratch once ORD-02 is over (read in its requests):
    ORD-02 alone read the worker's report of earlier outputs changed. Every call's is read."""
    verdict = _verdict("scribbles_after_ord02", ["ORD-02", "CMP-02"])
    assert verdict.native.accept is True, verdict.native
    assert verdict.gates["ORD-02"].status is Status.PASS, verdict.gates["ORD-02"]
    assert "changed after they were handed out" in _failed(verdict, "CMP-02", "output_aliasing")


def test_a_kernel_that_hands_an_output_out_again_after_ord02_fails_where_it_does():
    """Returns the tensor it returned last when the same values come again, once ORD-02 is over
    (read in its requests): its bytes never change (`written` 0), and only ORD-02 read the
    worker's report of an output in an earlier one's storage. Every call's is read."""
    verdict = _verdict("reuses_after_ord02", ["ORD-02", "CMP-02"])
    assert verdict.native.accept is True, verdict.native
    assert verdict.gates["ORD-02"].status is Status.PASS, verdict.gates["ORD-02"]
    assert "handed out twice" in _failed(verdict, "CMP-02", "output_aliasing")


def test_a_failures_text_is_cut_before_it_reaches_the_verdict():
    """Answers every call with a failure whose text is 8 MiB: the verdict held it once per
    gate and the native check, and so did every report and the results store."""
    verdict = _verdict("floods_its_error", ["ORD-02"])
    assert verdict.native.accept is False
    texts = [verdict.native.reason, *(g.detail for g in verdict.gates.values())]
    assert all(len(t) < 2 * MAX_ERROR_CHARS and "more characters" in t for t in texts), [
        len(t) for t in texts]


@pytest.mark.parametrize("name", ["wrong_in_the_harness_frames", "wrong_on_the_benchmarks_draws"])
def test_a_kernel_wrong_only_where_the_harness_calls_fails_cmp01_on_those_answers(name):
    """Right on every gate's call and wrong on the benchmark harness's, which it tells apart by
    the harness's frames or by its draws at seed 42: the native check rejected it and every
    gate accepted it. CMP-01 judges the answers the native check was given."""
    verdict = _verdict(name, ["CMP-01"])
    assert verdict.native.accept is False and "mismatch" in verdict.native.reason
    assert "the native check's trial 0" in _failed(verdict, "CMP-01", "distribution_dependent")
