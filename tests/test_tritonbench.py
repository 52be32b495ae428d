"""The TritonBench adapter: its layouts, its native check (call and execution accuracy), the
recorded-call templates, and one materialised case judged end to end.

Fixtures (tests/fixtures/tritonbench, written for kdiff in TritonBench's layouts):
- T: `leaky_relu_scale`, a torch function; its test prints one result. Three answers: one
  that raises, one that ignores `scale` (runs, prints something else), one that matches
  (wrapped in prose, a ```python fence and a chat end token, which upstream strips; it uses
  `torch` without importing it, which works because the test section imports it).
- G: `add_scalar`, a Triton kernel and wrapper; its test calls it three times (a vector, the
  matrix that is replayed, and a matrix too large to replay on a CPU). Three answers, one file
  each (a G answer pairs with its gold file once): a correct one; one whose wrapper reads a
  module-level constant, which upstream's reduction to imports and function definitions
  drops; and one that handles matrices only, so it is right on the replayed call and raises
  on the test's vector.
"""
from __future__ import annotations

import getpass
import json
import types
from pathlib import Path

import pytest
import torch

from kdiff.adapters.tritonbench import calls, cpu, layout, materialise
from kdiff.adapters.tritonbench import native as tb_native
from kdiff.adapters.tritonbench.materialise import MAX_ELEMENTS, choose_call, replayable
from kdiff.adapters.tritonbench.runner import ScriptResult, run_script
from kdiff.commands.run import ran_out_of_device_memory
from kdiff.data.model import Case, NativeVerdict, Status, Verdict
from kdiff.data.problem import load_problem
from kdiff.judging.context import GateOptions
from kdiff.judging.plugins import manager
from kdiff.judging.runconfig import RunConfig
from kdiff.sandbox.process import SandboxLimits
from kdiff.verdicts.judge import judge_case

FIXTURES = Path(__file__).parent / "fixtures" / "tritonbench"
BENCH = "tritonbench"


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KDIFF_CACHE", str(tmp_path_factory.mktemp("kdiff-cache")))
        yield


@pytest.fixture(scope="module")
def cases(cache):
    config = RunConfig(bench=BENCH, root=FIXTURES, generated=FIXTURES / "generated")
    found = manager().hook.kdiff_discover(bench=BENCH, config=config)
    return {c.id: c for c in found}


def native(case, preset="tritonbench"):
    ctx = types.SimpleNamespace(device="cpu",
                                candidate=types.SimpleNamespace(limits=SandboxLimits()))
    return manager().hook.kdiff_native_check(bench=BENCH, case=case, ctx=ctx, preset=preset)


# -- hooks and layout ----------------------------------------------------------------------

def test_hooks_answer_for_tritonbench_only():
    pm = manager()
    assert pm.hook.kdiff_native_presets(bench=BENCH) == ["tritonbench", "tritonbench-call"]
    assert pm.hook.kdiff_entry_points(bench=BENCH, case=None) == ("ModelNew",)
    assert BENCH in {name for found in pm.hook.kdiff_benches() for name, _ in found}


def test_code_clean_up_as_upstream():
    fenced = "Sure.\n```python\nimport torch\nx = 1\n```\n<|im_end|>"
    assert layout.clear_code(fenced) == "\nimport torch\nx = 1\n```\n"  # closing fence stays
    code = ("import torch\nBLOCK = 4\nclass A:\n    def m(self):\n        import math\n"
            "def f():\n    def g():\n        pass\n    return BLOCK\n")
    reduced = layout.reduce_to_definitions(code)
    imports, functions = reduced.split("\n\n", 1)
    assert imports == "import torch\nimport math"
    assert "BLOCK = 4" not in reduced and "class A" not in reduced
    # ast.walk order: top-level f, then the method m, then g nested in f.
    assert [ln.split("(")[0] for ln in functions.splitlines() if ln.lstrip().startswith("def")
            and not ln.startswith(" ")] == ["def f", "def m", "def g"]
    assert layout.reduce_to_definitions("def broken(:\n") == "def broken(:\n"


def _row(variant, instruction="", label=""):
    return layout.GeneratedRow(Path("x.jsonl"), 1, variant, instruction, "", label)


def test_pairing_rows_with_gold_files():
    stats = [{"file": "a.py", "output": "code A", "description": "adds\nthings"},
             {"file": "b.py", "output": "code A and B", "description": "adds things up"}]
    # G: the first unclaimed item containing the label; each item is claimed once.
    assert layout.match_files([_row("G", label="code A"), _row("G", label="code A<|EOT|>")],
                              stats) == ["a.py", "b.py"]
    # The one row left unpaired goes with the one item left over (upstream's special case).
    assert layout.match_files([_row("G", label="code A and B"), _row("G", label="edited")],
                              stats) == ["b.py", "a.py"]
    # T: the functional description must be in exactly one item's description.
    t = "Functional Description: adds things up\nWrapper Entry Information: f(x)"
    assert layout.match_files([_row("T", t)], stats) == ["b.py"]
    [error] = layout.match_files([_row("T", "Functional Description: adds")], stats)
    assert isinstance(error, layout.LayoutError) and "matches 2 gold items" in str(error)


def test_discovery(cases):
    assert sorted(cases) == ["G_good/G/add_scalar", "G_matrix_only/G/add_scalar",
                             "G_module_constant/G/add_scalar", "T_answers/T/leaky_relu_scale", "T_answers/T/leaky_relu_scale@2",
                             "T_answers/T/leaky_relu_scale@3"]
    for case in cases.values():
        assert case.discovery_error is None
        assert case.problem.name == "problem.py" and case.candidate.name == "candidate.py"
    g = cases["G_module_constant/G/add_scalar"]
    assert g.metadata["variant"] == "G" and g.metadata["target"] == "add_scalar"
    generated = (g.candidate.parent / "generated.py").read_text()
    assert "BLOCK_SIZE = 128" not in generated and "def add_scalar" in generated
    t = cases["T_answers/T/leaky_relu_scale@3"]
    assert t.metadata["variant"] == "T" and t.metadata["target"] == "leaky_relu_scale"
    script = Path(t.metadata["script"]).read_text()
    assert "Here is" not in script and "<|im_end|>" not in script
    assert script.endswith((FIXTURES / "data/TritonBench_T_v1/leaky_relu_scale.py")
                           .read_text().rpartition(layout.SEPARATOR)[2])


def test_rows_that_cannot_be_judged_say_why(cache, tmp_path):
    data = tmp_path / "data" / "TritonBench_T_v1"
    data.mkdir(parents=True)
    (data / "needs_device.py").write_text(
        "import torch\n\ndef needs_device(x):\n    return x + 1\n\n" + layout.SEPARATOR
        + "\n\ndef test_needs_device():\n"
        "    torch.cuda.set_per_process_memory_fraction(0.5)\n"
        "    return needs_device(torch.ones(2, device='cuda'))\n\nr = test_needs_device()\n")
    (tmp_path / "data" / "TritonBench_T_v1.json").write_text(json.dumps(
        [{"file": "needs_device.py", "name": "needs_device", "description": "Adds one."}]))
    generated = tmp_path / "out.jsonl"
    generated.write_text("\n".join(json.dumps(
        {"instruction": f"Functional Description: {d}\nWrapper Entry Information: f",
         "predict": "def needs_device(x):\n    return x + 1\n", "label": ""})
        for d in ("Adds one.", "Subtracts two.")) + "\n")
    config = RunConfig(bench=BENCH, root=tmp_path, generated=generated)
    found = manager().hook.kdiff_discover(bench=BENCH, config=config)
    errors = {c.id: c.discovery_error for c in found}
    assert "the gold test does not run on cpu" in errors["out/T/needs_device"]
    assert "matches 0 gold items" in errors["out/T/line-2"]


# -- the native check ------------------------------------------------------------------------

def test_call_accuracy_rejects_an_answer_that_raises(cases):
    verdict = native(cases["T_answers/T/leaky_relu_scale"])
    assert verdict.accept is False
    assert verdict.reason.startswith("call accuracy: fail (exit status 1: TypeError")


def test_execution_accuracy_rejects_different_stdout(cases):
    case = cases["T_answers/T/leaky_relu_scale@2"]
    assert native(case, "tritonbench-call").accept is True
    verdict = native(case)
    assert verdict.accept is False
    assert "call accuracy: pass; execution accuracy: fail" in verdict.reason
    assert "4.0000" in verdict.reason  # the gold run's printed value


def test_g_reduction_drops_module_constants(cases):
    assert native(cases["G_good/G/add_scalar"], "tritonbench-call").accept is True
    verdict = native(cases["G_module_constant/G/add_scalar"])
    assert verdict.accept is False and "NameError: name 'BLOCK_SIZE'" in verdict.reason


def test_scripts_are_killed_at_their_deadline(tmp_path):
    script = tmp_path / "spin.py"
    script.write_text("print('started', flush=True)\nwhile True:\n    pass\n")
    limits = SandboxLimits(start_timeout=1.0)
    result = run_script(script, "cuda", limits)  # "cuda": plain `python SCRIPT`
    assert result.timed_out and result.stdout == "started\n"
    assert result.failure() == "did not finish within 1 s"


def test_a_script_runs_with_a_workers_environment(tmp_path, monkeypatch):
    """A benchmark's script runs untrusted code: it sees none of the judge's secrets, and
    getpass.getuser() answers under a uid with no passwd entry (as root the child runs as one)
    in a judge whose shell sets no USER (torch.optim's imports ask it)."""
    monkeypatch.setenv("HF_TOKEN", "the judge's")
    monkeypatch.delenv("USER", raising=False)
    monkeypatch.delenv("LOGNAME", raising=False)
    script = tmp_path / "asks.py"
    script.write_text("import getpass, os\nprint(getpass.getuser(), os.environ.get('HF_TOKEN'))\n")
    result = run_script(script, "cpu", SandboxLimits(start_timeout=60.0))
    assert result.returncode == 0, result.failure()
    assert result.stdout.split() == [getpass.getuser(), "None"]


def test_cuda_code_runs_on_the_cpu(monkeypatch):
    if torch.cuda.is_available():
        pytest.skip("the CPU stand-in is installed only without a CUDA device")
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # before the kernel is defined
    import triton
    import triton.language as tl

    @triton.autotune(configs=[triton.Config({"BLOCK": 4}), triton.Config({"BLOCK": 8})],
                     key=["n"])
    @triton.jit
    def double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, 2 * tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

    with cpu.cuda_on_cpu():
        x = torch.tensor([1.0, -2.0, 3.0], device="cuda").cuda()
        y = torch.zeros(3).to("cuda", torch.float64)
        assert x.is_cuda and x.untyped_storage().device.type == "cpu" and y.dtype == torch.float64
        with torch.cuda.device(x.device):
            out = torch.empty_like(x)
            double[lambda meta: [triton.cdiv(3, meta["BLOCK"])]](x, out, 3)  # a list grid
        torch.cuda.synchronize()
    assert torch.equal(out, 2 * x) and double.best_config.kwargs == {"BLOCK": 4}
    assert not torch.zeros(1).is_cuda  # nothing left installed


def test_cuda_on_cpu_rounds_the_products_tf32_is_asked_for():
    """TritonBench's scripts and gold references multiply as a worker on the CPU device does:
    operands rounded to TF32 where the code turns it on, as a GPU's cuBLAS rounds them."""
    if torch.cuda.is_available():
        pytest.skip("the CPU stand-in is installed only without a CUDA device")
    from kdiff.sandbox.cuda_on_cpu import _tf32
    generator = torch.Generator().manual_seed(0)
    a, b = torch.randn(8, 16, generator=generator), torch.randn(16, 8, generator=generator)
    with cpu.cuda_on_cpu():
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            product = a.cuda() @ b.cuda()
        finally:
            torch.backends.cuda.matmul.allow_tf32 = False
    assert torch.equal(product, _tf32(a) @ _tf32(b))


def test_cuda_code_gets_the_worker_s_answers_and_leaves_none_behind():
    """TritonBench's wrappers time a launch by two events on a side stream, mark it for NVTX,
    draw from their own CUDA generator and reseed the GPU's: the CPU device's worker answers
    each (kdiff.sandbox.cuda_on_cpu), and TritonBench's code gets the same answers."""
    if torch.cuda.is_available():
        pytest.skip("the CPU stand-in is installed only without a CUDA device")
    with cpu.cuda_on_cpu():
        side, start, end = torch.cuda.Stream(), torch.cuda.Event(True), torch.cuda.Event(True)
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side), torch.cuda.nvtx.range("double"):
            start.record()
            generator = torch.Generator(device="cuda")
            drawn = torch.rand(4, device="cuda", generator=generator.manual_seed(3))
            end.record()
        end.synchronize()
        assert start.elapsed_time(end) >= 0 and torch.cuda.mem_get_info()[0] > 0
        torch.cuda.manual_seed(3)
        state = torch.cuda.get_rng_state()
        assert torch.equal(drawn, torch.rand(4, device="cuda"))
        torch.cuda.set_rng_state(state)
        assert torch.equal(drawn, torch.rand(4, device="cuda"))
    assert torch.Generator is torch._C.Generator  # nothing left installed
    with pytest.raises(RuntimeError):
        torch.cuda.Stream()

# -- recorded calls ------------------------------------------------------------------------------

def test_recorded_calls_of_the_gold_test(cases):
    problem = cases["G_good/G/add_scalar"].problem
    recorded = json.loads((problem.parent / "calls.json").read_text())
    assert recorded["status"] == "ok"
    shapes = [[c["args"][0]["tensor"]["shape"]] for c in recorded["calls"]]
    assert shapes == [[[3]], [[16, 40]], [[3, 4096]]]
    assert [c["args"][1:] for c in recorded["calls"]] == [[1.5], [], [2.0]]
    assert recorded["calls"][1]["kwargs"] == {"value": -0.25}
    first = recorded["calls"][0]["args"][0]["tensor"]
    assert (first["dtype"], first["min"], first["max"]) == ("float32", -2.0, 3.5)
    # The largest call within the CPU budget is replayed; 3 x 4096 is beyond it.
    assert 3 * 4096 > MAX_ELEMENTS and choose_call(recorded["calls"], "add_scalar") == 1
    # The main call first, then the test's other calls: the problem's variants.
    replayed = json.loads((problem.parent / "replayed.json").read_text())
    assert replayed == [recorded["calls"][i] for i in (1, 0, 2)]


def test_materialised_problem_replays_the_call_with_fresh_inputs(cases, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # as loading it sets; restored afterwards
    problem = load_problem(cases["G_good/G/add_scalar"].problem)
    assert problem.size_constants() == {"DIM_16": 16, "DIM_40": 40}  # CALL is no size
    assert problem.variants() == {"recorded call 0: add_scalar(float32[3], 1.5)": {"CALL": 1},
                                  "recorded call 2: add_scalar(float32[3, 4096], 2.0)":
                                      {"CALL": 2}}
    assert problem.constants() == {"DIM_16": 16, "DIM_40": 40, "CALL": 0}
    torch.manual_seed(0)
    [x] = problem.get_inputs()
    torch.manual_seed(1)
    [y] = problem.get_inputs()
    assert x.shape == (16, 40) and x.dtype == torch.float32 and not torch.equal(x, y)
    assert 0 <= float(x.min()) and float(x.max()) < 1  # the test's torch.rand range
    [out] = problem.Model()(x)  # the gold Triton kernel, through the interpreter
    assert torch.equal(out, x - 0.25)
    problem.module.DIM_40 = 7  # shape polymorphism scales the named size
    assert problem.get_inputs()[0].shape == (16, 7)


def test_call_templates_round_trip():
    idx = torch.tensor([[2, 0], [1, 1]])
    args = (torch.randn(3, 5, dtype=torch.float16), (idx, 4), torch.float64, "mean")
    kwargs = {"eps": float("-inf"), "device": torch.device("cpu"), "extra": {"w": torch.ones(5)}}
    call = {"function": "f", "args": [calls.encode(a) for a in args],
            "kwargs": {k: calls.encode(v) for k, v in kwargs.items()}}
    call = json.loads(json.dumps(call))
    assert calls.dims(call) == [2, 3, 5]
    tensors = calls.make_inputs(call)
    assert [t.shape for t in tensors] == [(3, 5), (2, 2), (5,)]
    assert tensors[0].dtype == torch.float16
    assert torch.equal(tensors[1], idx)  # integer tensors keep their values
    assert 0 <= float(tensors[2].min()) and float(tensors[2].max()) <= 2  # ones: U[0, 2]
    assert len(tensors[2].unique()) == 5
    new_args, new_kwargs = calls.rebuild(call, tuple(tensors))
    assert new_args[1][0] is tensors[1] and new_args[1][1] == 4 and isinstance(new_args[1], tuple)
    assert new_args[2:] == [torch.float64, "mean"]
    assert new_kwargs["eps"] == float("-inf") and new_kwargs["device"] == torch.device("cpu")
    assert new_kwargs["extra"]["w"] is tensors[2]
    with pytest.raises(calls.Unrecordable):
        calls.encode(torch.nn.Linear(2, 2))


def test_a_symmetric_or_positive_definite_matrix_is_drawn_so():
    """The test's literal matrices (a cholesky's input) carry a relation fresh uniform draws
    lost: a candidate asserting A = A^T, or a cholesky, then raised on every gate's inputs."""
    spd = torch.tensor([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
    symmetric = torch.tensor([[1.0, -2.0], [-2.0, 0.5]])
    plain = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    args = (spd, symmetric, plain, torch.ones(2, 2))
    call = json.loads(json.dumps({"function": "f", "args": [calls.encode(a) for a in args],
                                  "kwargs": {}}))
    assert [s.get("matrix") for s in calls.call_specs(call)] == [
        "symmetric positive definite", "symmetric", None, None]
    for seed in range(5):
        torch.manual_seed(seed)
        a, s, p, ones = calls.make_inputs(call, {"DIM_3": 7})  # a scaled size too
        assert a.shape == (7, 7) and torch.equal(a, a.T)
        assert int(torch.linalg.cholesky_ex(a).info) == 0
        assert torch.equal(s, s.T) and not torch.equal(p, p.T) and not torch.equal(ones, ones.T)


def test_function_outputs_as_model_outputs():
    call = {"function": "f", "args": [calls.encode(torch.ones(2))], "kwargs": {}}
    x = torch.tensor([1.0, 2.0])
    nested = calls.FunctionModel(lambda t: (t * 2, None, {"k": [t + 1, 3]}), call)(x)
    assert [o.tolist() for o in nested] == [[2.0, 4.0], [2.0, 3.0], 3]

    def in_place(t):
        t.mul_(3)

    [out] = calls.FunctionModel(in_place, call)(x)
    assert out.tolist() == [3.0, 6.0] and out.data_ptr() != x.data_ptr()


# -- end to end --------------------------------------------------------------------------------

def test_judge_a_materialised_case(cases, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # as loading the problem sets; restored after
    config = RunConfig(bench=BENCH, gates=["CMP-01", "ORD-02"])
    verdict = judge_case(cases["T_answers/T/leaky_relu_scale@3"], config, manager())
    assert verdict.error is None
    assert verdict.native.accept is True, verdict.native.reason
    assert "execution accuracy: pass" in verdict.native.reason
    assert {g: r.status for g, r in verdict.gates.items()} == {
        "CMP-01": Status.PASS, "ORD-02": Status.PASS}
    assert verdict.verifier_accept is True


@pytest.mark.gpu
def test_on_the_device(tmp_path, monkeypatch):
    """As upstream runs it: scripts as plain `python SCRIPT` on the GPU, the gates on it too."""
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    monkeypatch.setenv("KDIFF_CACHE", str(tmp_path))
    config = RunConfig(bench=BENCH, root=FIXTURES, generated=FIXTURES / "generated",
                       gates=["CMP-01", "ORD-02"], gate_options=GateOptions(device="cuda"))
    pm = manager()
    found = {c.id: c for c in pm.hook.kdiff_discover(bench=BENCH, config=config)}
    assert all(c.discovery_error is None for c in found.values())
    verdicts = {cid: judge_case(found[cid], config, pm)
                for cid in ("T_answers/T/leaky_relu_scale@2", "T_answers/T/leaky_relu_scale@3",
                            "G_good/G/add_scalar")}
    assert "execution accuracy: fail" in verdicts["T_answers/T/leaky_relu_scale@2"].native.reason
    for cid in ("T_answers/T/leaky_relu_scale@3", "G_good/G/add_scalar"):
        assert verdicts[cid].native.accept is True, verdicts[cid].native.reason
        assert verdicts[cid].gates["ORD-02"].status is Status.PASS



# Every variant of the gold test judged, 10 s: in the `slow` set.
@pytest.mark.slow
def test_the_test_s_other_calls_are_judged_as_variants(cases, monkeypatch):
    """An answer right on the replayed call and wrong on another call of the gold test: the
    native check runs every call and rejects it, and so does CMP-03, on the call it fails."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    config = RunConfig(bench=BENCH, gates=["CMP-03"])
    matrix_only = judge_case(cases["G_matrix_only/G/add_scalar"], config, manager())
    assert matrix_only.native.accept is False
    assert "call accuracy: fail" in matrix_only.native.reason
    result = matrix_only.gates["CMP-03"]
    assert result.status is Status.FAIL
    assert result.detail.startswith("recorded call 0: add_scalar(float32[3], 1.5)")
    good = judge_case(cases["G_good/G/add_scalar"], config, manager())
    assert good.native.accept is True and good.verifier_accept is True
    assert good.gates["CMP-03"].status is Status.PASS


def test_calls_that_differ_only_in_values_are_replayed_once():
    def call(shape, lo, **kwargs) -> dict:
        return {"function": "f", "args": [{"tensor": {"shape": shape, "dtype": "float32",
                                                      "device": "cpu", "min": lo, "max": 1.0}}],
                "kwargs": kwargs}
    recorded = [call([4], 0.0), call([4], -1.0), call([4], 0.0, dim=0), call([5], 0.0)]
    assert replayable(recorded, "f") == [0, 2, 3]


def test_a_call_writing_into_out_is_replayed_only_when_it_is_the_only_one():
    def call(n: int, **kwargs) -> dict:
        tensor = {"tensor": {"shape": [n], "dtype": "float32", "device": "cpu",
                             "min": 0.0, "max": 1.0}}
        return {"function": "sub", "args": [tensor, tensor],
                "kwargs": {k: tensor for k in kwargs}}
    # as TritonBench-T's sub: plain calls, then one with out= (here the largest)
    recorded = [call(2), call(3), call(4, out=1)]
    assert choose_call(recorded, "sub") == 1
    assert choose_call([call(4, out=1)], "sub") == 0


CUDA_OOM_STDERR = """Traceback (most recent call last):
  File "/tmp/gold.py", line 40, in <module>
    out = torch.matmul(a, b)
torch.AcceleratorError: CUDA error: out of memory
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing CUDA_LAUNCH_BLOCKING=1
Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.
"""


def test_a_failed_run_is_named_by_its_exception_not_cuda_boilerplate():
    """torch ends a CUDA error with boilerplate lines; the one-line failure must keep the
    exception, which kdiff.commands.run reads to judge an out-of-memory case again alone."""
    failure = ScriptResult(1, "", CUDA_OOM_STDERR, 60.0).failure()
    assert failure == "exit status 1: torch.AcceleratorError: CUDA error: out of memory"
    verdict = Verdict(Case("matmul", Path("g.py"), Path("c.py")),
                      NativeVerdict(False, "tritonbench", reason=failure), {})
    assert ran_out_of_device_memory(verdict)
    assert ScriptResult(2, "", "usage: x\nsomething went wrong\n", 60.0).failure() == \
        "exit status 2: something went wrong"


def test_a_failed_gold_run_is_not_cached(tmp_path, monkeypatch):
    """A gold run that failed (out of device memory beside other judges) is run again for the
    next case; one that passed is cached beside the gold file and read back."""
    runs = [ScriptResult(1, "", CUDA_OOM_STDERR, 60.0), ScriptResult(0, "ok\n", "", 60.0)]
    monkeypatch.setattr(tb_native, "run_script", lambda *args: runs.pop(0))
    script = tmp_path / "gold.py"
    script.write_text("print('ok')\n")
    limits = SandboxLimits()
    assert tb_native.gold_stdout(script, "cuda", limits).returncode == 1
    assert not (tmp_path / "stdout-cuda.json").exists()
    assert tb_native.gold_stdout(script, "cuda", limits).stdout == "ok\n"
    assert tb_native.gold_stdout(script, "cuda", limits).stdout == "ok\n"  # cached: no run left
    assert not runs


def test_a_gold_recording_is_made_again_by_changed_recording_code(tmp_path, monkeypatch):
    """The recording of a gold test is kept across runs; one kept from an older recorder (no
    `matrix` mark on a symmetric matrix) must not be replayed by a newer one."""
    monkeypatch.setenv("KDIFF_CACHE", str(tmp_path))
    recorded = []

    def record(code, test, out, device, limits):
        recorded.append(out)
        out.write_text(json.dumps({"status": "ok", "calls": []}))
        return ScriptResult(0, "", "", 0.1)
    monkeypatch.setattr(materialise, "record_calls", record)
    gold = layout.read_gold(FIXTURES / "data" / "TritonBench_T_v1" / "leaky_relu_scale.py", "T")
    first = materialise.prepare_gold(gold, "cpu", SandboxLimits()).folder
    assert materialise.prepare_gold(gold, "cpu", SandboxLimits()).folder == first
    assert len(recorded) == 1  # kept
    monkeypatch.setattr(materialise, "recording_code", lambda: "another recorder")
    assert materialise.prepare_gold(gold, "cpu", SandboxLimits()).folder != first
    assert len(recorded) == 2


@pytest.mark.parametrize("left", [None, "{not json", '{"calls": []}'])
def test_a_recording_that_is_missing_or_unreadable_is_the_case_s_error(tmp_path, monkeypatch,
                                                                       left):
    """A recording child that exits 0 without writing its file (seen on an H100 with judges
    beside it), or writes one that does not read, leaves that gold's cases an error row each;
    it must not end the run's discovery, and so every other case's verdict."""
    monkeypatch.setenv("KDIFF_CACHE", str(tmp_path))

    def record(code, test, out, device, limits):
        if left is not None:
            out.write_text(left)
        return ScriptResult(0, "", "", 0.1)
    monkeypatch.setattr(materialise, "record_calls", record)
    gold = layout.read_gold(FIXTURES / "data" / "TritonBench_T_v1" / "leaky_relu_scale.py", "T")
    case = materialise.prepare_gold(gold, "cuda", SandboxLimits())
    assert case.error and ("could not be recorded" in case.error
                           or "does not read" in case.error)
