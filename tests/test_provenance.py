"""Provenance: which kernels computed the candidate's answer, attributed by the judge.

The four CPU states on tests/fixtures/provenance (problem scaled_relu: relu then mul): an
honest Triton kernel (own), a wrapper around other torch operators (library-only), a call of
the problem's own Model (reference-call), a decoy that launches a trivial Triton kernel and
returns a library result (mixed, the library's share 2 of 3 launches). Recorded in this
process (fast) and through the worker and the native check (the decoy here; all four `slow`);
a side-stream timing hack on CUDA (`gpu`)."""
from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import torch

os.environ.setdefault("TRITON_INTERPRET", "1")  # before a fixture decorates its kernels

from kdiff.commands.invocation import EXIT_FOUND, EXIT_OK, exit_status
from kdiff.data.model import Case, GateResult, NativeVerdict, Status, Verdict
from kdiff.data.problem import load_candidate_class, load_problem
from kdiff.data.provenance import Origin, Provenance, ProvenanceKind
from kdiff.differential.summary import summarize
from kdiff.judging.context import GateContext
from kdiff.judging.plugins import manager
from kdiff.judging.runconfig import RunConfig
from kdiff.reports import junit, markdown
from kdiff.reports.terminal import verdict_line
from kdiff.sandbox.provenance import (
    MAX_SEQUENCES,
    DeviceKernel,
    ProvenanceRecorder,
    RecordedProvenance,
    traced_ops,
)
from kdiff.sandbox.replies import CheckedCandidate, UnusableOutput, checked_reply
from kdiff.verdicts.judge import judge_case
from kdiff.verdicts.provenance import (
    OwnCode,
    decide,
    judge_provenance,
    merged,
    read_benchmark_calls,
    symbol_name,
)

FIXTURES = Path(__file__).parent / "fixtures" / "provenance"
PROBLEM = FIXTURES / "scaled_relu.py"
EXPECTED = {"own_triton": ProvenanceKind.OWN, "torch_wrapper": ProvenanceKind.LIBRARY_ONLY,
            "calls_reference": ProvenanceKind.REFERENCE_CALL, "decoy": ProvenanceKind.MIXED}
DECOY_SHARE = 2 / 3  # abs and add (the library's), one touch_kernel launch (its own)


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> ProvenanceRecorder:
    """A recorder installed in this process; the launch paths it wraps are restored after."""
    from torch.utils import cpp_extension
    from triton.runtime import interpreter, jit
    for owner, name in ((interpreter.InterpretedFunction, "run"), (jit.JITFunction, "run"),
                        (cpp_extension, "load"), (cpp_extension, "load_inline")):
        monkeypatch.setattr(owner, name, getattr(owner, name))
    rec = ProvenanceRecorder()
    rec.install()
    return rec


def reference_ops() -> list[str]:
    problem = load_problem(PROBLEM)
    x = problem.get_inputs()
    return traced_ops(lambda: problem.Model()(*x))


def test_the_references_trace_is_kept_for_the_problems_next_candidate(tmp_path: Path,
                                                                         monkeypatch):
    """Traced once per problem, inputs and tracing code; an edited problem is traced again."""
    from kdiff.verdicts import provenance
    monkeypatch.setenv("KDIFF_CACHE", str(tmp_path / "cache"))
    problem = tmp_path / "scaled_relu.py"
    problem.write_text(PROBLEM.read_text())
    traces = []

    def counted(fn):
        traces.append(1)
        return traced_ops(fn)
    monkeypatch.setattr(provenance, "traced_ops", counted)
    first = provenance.reference_ops(GateContext(load_problem(problem), None))
    again = provenance.reference_ops(GateContext(load_problem(problem), None))
    assert first == again == ["aten.relu.default", "aten.mul.Tensor"] and len(traces) == 1
    problem.write_text(PROBLEM.read_text().replace("torch.relu(x)", "torch.sigmoid(x)"))
    edited = provenance.reference_ops(GateContext(load_problem(problem), None))
    assert edited == ["aten.sigmoid.default", "aten.mul.Tensor"] and len(traces) == 2


def recorded(recorder: ProvenanceRecorder, name: str, calls: int = 2,
             candidate: Path | None = None) -> RecordedProvenance:
    model = load_candidate_class(candidate or FIXTURES / f"{name}.py")()
    recorder.watch(model)
    x = torch.randn(8, 256)
    for _ in range(calls):
        with recorder.candidate(model):
            out = model(x)
    assert torch.equal(out, torch.relu(x) * 2.0)
    return RecordedProvenance.parse(recorder.reply(clear=True))


@pytest.mark.parametrize("name", list(EXPECTED))
def test_four_states_recorded_in_process(recorder: ProvenanceRecorder, name: str):
    got = decide(recorded(recorder, name), OwnCode.read(FIXTURES / f"{name}.py", None),
                 reference_ops())
    assert got.kind is EXPECTED[name], got
    assert got.calls == 2 and got.share_basis == "launches"
    if name == "decoy":
        assert got.library_share == pytest.approx(DECOY_SHARE)
        assert {k.name: k.origin for k in got.kernels}["touch_kernel"] is Origin.OWN
    if name == "own_triton":
        assert got.library_share == 0.0


def test_the_reference_traced_by_the_judge_is_its_computing_operators():
    assert reference_ops() == ["aten.relu.default", "aten.mul.Tensor"]


def test_the_interpreters_own_operators_are_not_the_candidates(recorder: ProvenanceRecorder):
    record = recorded(recorder, "own_triton", calls=1)
    assert record.aten == {}  # the interpreter copies arguments with aten.copy_ inside
    assert list(record.triton.values()) == [{"scaled_relu_kernel": 1}]


def test_a_claimed_launch_the_source_does_not_define_is_a_librarys(
        recorder: ProvenanceRecorder):
    """A worker that reports the honest kernel's launch for a torch wrapper: the judge finds
    no such kernel in the wrapper's file, so nothing of its own ran."""
    record = recorded(recorder, "torch_wrapper")
    record.triton = {str(FIXTURES / "torch_wrapper.py"): {"scaled_relu_kernel": 9}}
    got = decide(record, OwnCode.read(FIXTURES / "torch_wrapper.py", None), reference_ops())
    assert got.kind is ProvenanceKind.LIBRARY_ONLY
    assert "no such Triton kernel" in got.detail


def test_a_launch_that_raises_is_not_the_candidates_work(recorder: ProvenanceRecorder):
    """A try/except fallback whose Triton kernel raises at every launch: each launch was
    counted on entry, so torch's answer read `mixed (library 50% of launches)`, the kernel
    that never ran `own`. A launch is counted once it returns."""
    candidate = Path(__file__).parent / "hostile" / "falls_back_when_its_kernel_raises.py"
    model = load_candidate_class(candidate)()
    recorder.watch(model)
    x = torch.randn(4, 8)
    with recorder.candidate(model):
        assert torch.equal(model(x), x * 2)
    got = decide(RecordedProvenance.parse(recorder.reply(clear=True)),
                 OwnCode.read(candidate, None), [])
    assert got.kind is ProvenanceKind.LIBRARY_ONLY, got


def test_a_kernel_of_another_file_is_a_librarys(recorder: ProvenanceRecorder):
    record = recorded(recorder, "own_triton")
    record.triton = {"/tmp/torchinductor_x/ab/cab.py": dict(record.triton.popitem()[1])}
    got = decide(record, OwnCode.read(FIXTURES / "own_triton.py", None), reference_ops())
    assert got.kind is ProvenanceKind.LIBRARY_ONLY
    assert got.kernels[0].source == "inductor"


@pytest.mark.parametrize("named", [True, False], ids=["named beside it", "not named"])
def test_a_kernel_in_a_module_the_candidate_loads_beside_it_is_its_own(
        recorder: ProvenanceRecorder, tmp_path: Path, named: bool):
    """A candidate whose kernel lives in a module it loads from its own folder (GPU MODE's
    materialised wrapper loads the submission's `submission.py`): that module is its own
    code. A module it does not name is not, though it is the same file beside it."""
    (tmp_path / "submission.py").write_text((FIXTURES / "own_triton.py").read_text())
    wrapper = tmp_path / "candidate.py"
    # Not named: the file's name is built at run time, so the judge cannot read it.
    file_name = "'submission.py'" if named else "'sub' + 'mission.py'"
    wrapper.write_text("from pathlib import Path\n\nfrom kdiff.data.problem import load_module\n\n"
                       f"SUBMISSION = load_module(Path(__file__).with_name({file_name}), 's')\n"
                       "ModelNew = SUBMISSION.ModelNew\n")
    got = decide(recorded(recorder, "own_triton", candidate=wrapper),
                 OwnCode.read(wrapper, None), reference_ops())
    assert got.kind is (ProvenanceKind.OWN if named else ProvenanceKind.LIBRARY_ONLY), got


def test_an_extension_outside_the_workers_folder_is_a_librarys(tmp_path: Path):
    candidate = tmp_path / "ext.py"
    candidate.write_text("from torch.utils.cpp_extension import load_inline\n")
    record = RecordedProvenance(calls=1, extensions={"/usr/lib/libx.so": {"forward": 1}})
    assert decide(record, OwnCode.read(candidate, tmp_path / "w"), []).kind is \
        ProvenanceKind.LIBRARY_ONLY
    record.extensions = {str(tmp_path / "w" / "ext" / "ext.so"): {"forward": 1}}
    assert decide(record, OwnCode.read(candidate, tmp_path / "w"), []).kind is \
        ProvenanceKind.OWN


def test_source_launches_missing_from_the_record_are_noted(recorder: ProvenanceRecorder):
    record = recorded(recorder, "torch_wrapper")
    got = decide(record, OwnCode.read(FIXTURES / "own_triton.py", None), reference_ops(),
                 ["scaled_relu_kernel"])
    assert "none was recorded" in got.detail


@pytest.mark.parametrize("bad", [
    [], {"calls": 1},
    {**RecordedProvenance(calls=1).to_reply(), "calls": -1},
    {**RecordedProvenance().to_reply(), "sequences": [["aten.add.Tensor"]] * (MAX_SEQUENCES + 1)},
    {**RecordedProvenance().to_reply(), "aten": {"x" * 1000: 1}},
    {**RecordedProvenance().to_reply(),
     "device": [{"name": "k", "launches": 1, "seconds": float("nan")}]},
    {**RecordedProvenance().to_reply(), "triton": {"f.py": {"k": True}}},
    {**RecordedProvenance().to_reply(), "tuning": [{"name": "k", "launches": 1}]},
])
def test_a_malformed_record_is_refused(bad):
    with pytest.raises(ValueError):
        RecordedProvenance.parse(bad)


def test_the_autotuners_benchmarks_are_noted_and_left_out_of_the_share():
    """Device time while Triton's autotuner times configurations (its runs of the kernel, the
    fills that clear the L2 cache) computes no answer: an honest tuned kernel stays own."""
    reply = RecordedProvenance(
        calls=1, device=[DeviceKernel("scaled_relu_kernel", 1, 1e-5)],
        tuning=[DeviceKernel("void at::native::vectorized_elementwise_kernel<FillFunctor<int>>",
                             200, 2.5), DeviceKernel("scaled_relu_kernel", 200, 0.1)]).to_reply()
    got = decide(RecordedProvenance.parse(reply), OwnCode.read(FIXTURES / "own_triton.py", None),
                 reference_ops())
    assert got.kind is ProvenanceKind.OWN and got.library_share == 0.0, got
    assert "autotuner benchmarked configurations during the calls: 400 device activities" \
        in got.detail, got.detail


def test_library_work_inside_an_autotuner_benchmark_is_counted():
    """A configuration's pre-hook runs inside the benchmark: work there that is neither the
    candidate's kernel nor the cache flush (a GEMM writing the answer) stays a library's."""
    reply = RecordedProvenance(
        calls=1, device=[DeviceKernel("scaled_relu_kernel", 1, 1e-5)],
        tuning=[DeviceKernel("sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n", 2, 3e-5)]).to_reply()
    got = decide(RecordedProvenance.parse(reply), OwnCode.read(FIXTURES / "own_triton.py", None),
                 reference_ops())
    assert got.kind is ProvenanceKind.MIXED and got.library_share == pytest.approx(0.75), got
    assert "autotuner" not in got.detail, got.detail


def test_a_provenance_field_that_is_not_a_dict_is_unusable():
    with pytest.raises(UnusableOutput):
        checked_reply("provenance", {"provenance": ["own"]})


def test_cuda_kernel_names_are_read_mangled_or_demangled():
    assert symbol_name("_ZN2ns9my_kernelEPf") == "my_kernel"
    assert symbol_name("_Z9my_kernelPfi") == "my_kernel"
    assert symbol_name("void ns::my_kernel<float>(float*, int)") == "my_kernel"
    assert symbol_name("scaled_relu_kernel") == "scaled_relu_kernel"


# -- through the worker and the native check ------------------------------------------------
def judged(name: str) -> Verdict:
    case = Case(name, PROBLEM, FIXTURES / f"{name}.py")
    # One cheap gate: provenance comes from the native check's calls, whatever the gates.
    return judge_case(case, RunConfig(native="kernelbench-v0.1", gates=["ORD-02"]), manager())


def test_the_worker_records_the_benchmarks_calls():
    v = judged("decoy")
    assert v.native.accept is True
    p = v.provenance
    assert p.kind is ProvenanceKind.MIXED and p.library_share == pytest.approx(DECOY_SHARE)
    # The native check's five trials and ORD-02's five runs, the reference's runs left out.
    assert p.calls == 10
    assert p.outstanding == []
    assert Verdict.from_json(v.to_json()).provenance == p


def test_the_references_calls_in_the_worker_are_not_the_candidates():
    """The worker runs the reference too (the benchmark's loop, a gate's timing): only the
    candidate's instances are recorded."""
    config = RunConfig(native="kernelbench-v0.1")
    with CheckedCandidate(PROBLEM, FIXTURES / "torch_wrapper.py", "cpu", ("ModelNew",),
                          config.limits) as candidate:
        ctx = GateContext(load_problem(PROBLEM), candidate, config.gate_options)
        candidate.request("call", key=ctx.reference_key_in_worker(),
                          inputs=ctx.benchmark_inputs(0))
        benchmark = read_benchmark_calls(ctx)
        assert benchmark.calls == 0
        ctx.call(ctx.benchmark_inputs(0))
        assert judge_provenance(ctx, benchmark).kind is ProvenanceKind.LIBRARY_ONLY


def test_a_fallback_on_inputs_the_benchmark_does_not_draw_is_counted():
    """A Triton kernel on the benchmark's shape and the reference's torch operators on any
    other (a try/except fallback): the gates' calls count as the native check's do."""
    config = RunConfig(native="kernelbench-v0.1")
    with CheckedCandidate(PROBLEM, FIXTURES / "falls_back_off_its_shape.py", "cpu",
                          ("ModelNew",), config.limits) as candidate:
        ctx = GateContext(load_problem(PROBLEM), candidate, config.gate_options)
        ctx.call(ctx.benchmark_inputs(0))  # the native check's: two whole blocks
        benchmark = read_benchmark_calls(ctx)
        ctx.call([torch.randn(3, 5)])  # a gate's odd shape
        p = judge_provenance(ctx, benchmark)
    assert p.kind is ProvenanceKind.REFERENCE_CALL and p.calls == 2, p


def test_work_an_output_defers_until_it_is_read_is_the_calls():
    """A Triton kernel of its own that computes nothing, and a tensor subclass whose values
    torch computes when first read (lazy evaluation): provenance said `own` while the
    reading ran after the call, outside its record."""
    hostile = Path(__file__).parent / "hostile"
    config = RunConfig(native="kernelbench-v0.1")
    with CheckedCandidate(hostile / "problem.py", hostile / "computes_when_read.py", "cpu",
                          ("ModelNew",), config.limits) as candidate:
        ctx = GateContext(load_problem(hostile / "problem.py"), candidate, config.gate_options)
        x = ctx.benchmark_inputs(0)
        out = ctx.call(x)
        p = judge_provenance(ctx, read_benchmark_calls(ctx))
    assert torch.equal(out.outputs[0], x[0] * 2)
    assert p.kind is ProvenanceKind.REFERENCE_CALL, p
    assert any(k.name == "aten.mul.Tensor" and k.origin is Origin.LIBRARY for k in p.kernels), p


def test_the_gates_copies_and_casts_are_not_library_work():
    """What an honest wrapper runs on a gate's transposed or recast input (`.contiguous()`,
    `.float()`) leaves it `own`; any computing operator in the gates' calls makes it mixed."""
    own = OwnCode.read(FIXTURES / "own_triton.py", None)
    launches = {str((FIXTURES / "own_triton.py").resolve()): {"scaled_relu_kernel": 5}}
    benchmark = RecordedProvenance(calls=5, triton=launches)
    copies = {"aten.clone.default": 3, "aten.copy_.default": 3, "aten._to_copy.default": 3}
    gates = RecordedProvenance(calls=6, triton=launches, aten=copies)
    assert decide(merged(benchmark, gates), own, []).kind is ProvenanceKind.OWN
    gates.aten["aten.abs.default"] = 2
    p = decide(merged(benchmark, gates), own, [])
    assert p.kind is ProvenanceKind.MIXED and p.library_share == pytest.approx(2 / 12)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(EXPECTED))
def test_four_states_through_the_worker(name: str):
    v = judged(name)
    assert v.native.accept is True
    assert v.provenance.kind is EXPECTED[name], v.provenance


@pytest.mark.gpu
def test_work_left_on_a_side_stream_is_outstanding_on_cuda():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    case = Case("side_stream", PROBLEM, FIXTURES / "side_stream.py")
    config = RunConfig(native="kernelbench-v0.1", gates=["ORD-02"])
    config.gate_options.device = "cuda"
    p = judge_case(case, config, manager()).provenance
    assert p.share_basis == "device time", p
    assert {k.name: k.origin for k in p.kernels}.get("scaled_relu_kernel") is Origin.OWN, p
    assert any("still running on stream" in o for o in p.outstanding), p
    honest = judge_case(Case("own", PROBLEM, FIXTURES / "own_triton.py"), config,
                        manager()).provenance
    assert honest.kind is ProvenanceKind.OWN and honest.outstanding == [], honest


@pytest.mark.gpu
def test_the_first_recording_on_cuda_records_the_device_and_imports_no_compiler():
    """A fresh process's first recorded call: its device kernels are recorded, and the
    recorder imports nothing more (torch.profiler.profile's start imports torch._inductor,
    seconds of every worker's first call)."""
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    program = (
        "import sys, torch\n"
        "from kdiff.sandbox.provenance import ProvenanceRecorder\n"
        "recorder, model = ProvenanceRecorder('cuda'), torch.nn.Identity()\n"
        "recorder.watch(model)\n"
        "with recorder.candidate(model):\n"
        "    (torch.ones(1024, device='cuda') * 2).sum().item()\n"
        "print(len(recorder.record.device), 'torch._inductor' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                         check=True).stdout.split()
    assert int(out[-2]) >= 1 and out[-1] == "False", out


@pytest.mark.gpu
def test_an_autotuned_kernels_benchmarks_are_not_library_work_on_cuda():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    config = RunConfig(native="kernelbench-v0.1", gates=["ORD-02"])
    config.gate_options.device = "cuda"
    p = judge_case(Case("tuned", PROBLEM, FIXTURES / "own_autotuned.py"), config,
                   manager()).provenance
    assert p.kind is ProvenanceKind.OWN and p.library_share == 0.0, p
    assert "autotuner benchmarked configurations" in p.detail, p


# -- reports, the differential engine, exit status ------------------------------------------
def verdict(name: str, kind: ProvenanceKind | None, native: bool = True) -> Verdict:
    v = Verdict(Case(name, PROBLEM, FIXTURES / f"{name}.py"),
                NativeVerdict(native, "kernelbench-v0.1"),
                {"EXC-01": GateResult("EXC-01", Status.PASS)})
    v.provenance = Provenance(kind, library_share=1.0, detail="why")
    return v


RUN = [verdict("own_triton", ProvenanceKind.OWN), verdict("torch_wrapper",
                                                          ProvenanceKind.LIBRARY_ONLY),
       verdict("calls_reference", ProvenanceKind.REFERENCE_CALL, native=False)]


def test_the_differential_engine_counts_library_only_among_native_accepted():
    counts = summarize(RUN).provenance
    assert counts.kinds == {"own": 1, "library-only": 1, "reference-call": 1}
    assert (counts.library_only_of_native_accepted.k,
            counts.library_only_of_native_accepted.n) == (1, 2)
    assert summarize(RUN).to_json()["provenance"]["kinds"]["library-only"] == 1


def test_fail_on_provenance_and_require_own_kernel():
    assert exit_status(RUN[:1], "provenance") == EXIT_OK
    assert exit_status(RUN, "provenance") == EXIT_FOUND
    assert exit_status(RUN, "violation") == EXIT_OK  # the verifier's verdict is unchanged
    assert exit_status(RUN, "violation", require_own_kernel=True) == EXIT_FOUND
    assert exit_status([verdict("x", None)], "provenance") == EXIT_FOUND  # no readable record


def test_reports_show_provenance():
    suite = junit.element(RUN, "kernelbench", require_own_kernel=True)
    assert suite.get("failures") == "2"
    cases = suite.findall("testcase")
    assert [p.get("value") for c in cases for p in c.iter("property")
            if p.get("name") == "provenance"] == ["own", "library-only", "reference-call"]
    assert cases[1].find("failure").get("type") == "provenance"
    assert junit.element(RUN, "kernelbench").get("failures") == "0"
    ET.tostring(suite)
    text = markdown.render(RUN, "kernelbench", "kernelbench-v0.1", "cpu")
    assert "| provenance" in text and "library-only" in text
    assert "native-accepted kernels library-only: 1/2" in text
    assert verdict_line(RUN[1]).endswith("provenance library-only")


@pytest.mark.slow  # inductor compiles C++ on the CPU: about 40 s
def test_recording_leaves_torch_compile_compiling():
    """Under a dispatch mode Dynamo falls back to eager unless the mode says it ignores
    compile internals: the recorder must not change what a compiled candidate runs."""
    compiled = torch.compile(lambda x: torch.relu(x) * 2.0 + 1.0)
    x = torch.randn(64)
    recorder = ProvenanceRecorder()
    recorder.watch(compiled)
    with recorder.candidate(compiled):
        compiled(x)
    assert traced_ops(lambda: compiled(x)) == []  # inductor's fused kernel, no aten operator
