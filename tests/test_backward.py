"""Problems that declare KDIFF_BACKWARD are judged on their gradients too."""
from pathlib import Path

import pytest
import torch

from kdiff.data.differentiated import ForwardParameters, differentiated_inputs
from kdiff.data.model import Case, Status
from kdiff.data.problem import LoadError
from kdiff.judging.context import GateContext, GateOptions
from kdiff.judging.plugins import manager
from kdiff.judging.runconfig import RunConfig
from kdiff.verdicts.judge import judge_case

CORE = Path(__file__).parent / "fixtures" / "core"
PROBLEM = CORE / "tanh_matmul_backward.py"
ROW_MAX = CORE / "row_max_backward.py"
ROPE = CORE / "rope_backward.py"
ATTENTION = CORE / "attention_mask_backward.py"
HEADS = CORE / "attention_heads_mask_backward.py"
FLASH = CORE / "attention_flash_backward.py"


def reference_as_candidate(tmp_path: Path, problem: Path = PROBLEM) -> Path:
    path = tmp_path / "reference_candidate.py"
    path.write_text(f"import pathlib\nexec(pathlib.Path({str(problem)!r}).read_text())\n"
                    "ModelNew = Model\n")
    return path


def judge(candidate: Path, gates: list[str], problem: Path = PROBLEM):
    config = RunConfig(gates=gates, gate_options=GateOptions(device="cpu"))
    case = Case(id=candidate.stem, problem=problem, candidate=candidate)
    return judge_case(case, config, manager(), "kernelbench-v0.1")


def assert_cmp01_passes_or_fails_the_gradient(candidate: Path, problem: Path, honest: bool):
    """CMP-01 passes an honest backward; a wrong one fails it on the gradient (output 1)."""
    cmp = judge(candidate, ["CMP-01"], problem).gates["CMP-01"]
    if honest:
        assert cmp.status is Status.PASS, cmp.detail
    else:
        assert cmp.status is Status.FAIL and "output 1" in cmp.detail, cmp.detail


def test_reference_gradients_pass_and_fp16_gradients_fail(tmp_path):
    honest = judge(reference_as_candidate(tmp_path), ["PRC-01", "ORD-02"])
    assert honest.native.accept is True
    assert all(g.status is Status.PASS for g in honest.gates.values()), honest.gates
    defective = judge(CORE / "tanh_matmul_fp16_gradient.py", ["PRC-01"])
    assert defective.native.accept is True  # the benchmark only checks the forward
    prc = defective.gates["PRC-01"]
    assert prc.status is Status.FAIL and prc.signature == "below_working_precision"
    assert "output 1" in prc.detail or "output 2" in prc.detail  # a gradient, not the forward


def test_exc01_judges_gradients_a_backward_swallows_nan_in():
    """EXC-01's reach of an injection covers the forward's outputs only; the gradients after
    them are judged as reached (an IndexError, a kdiff error, before)."""
    defective = judge(CORE / "tanh_matmul_nan_gradient.py", ["EXC-01"])
    exc = defective.gates["EXC-01"]
    assert exc.status is Status.FAIL and exc.signature == "nan_swallowed", exc.detail
    assert "output 0" not in exc.detail, exc.detail  # the forward is exact


def test_an_integer_output_is_judged_as_an_output_and_not_differentiated(tmp_path):
    """torch.max's int64 indices went to autograd.grad with the values: every gate skipped or
    failed ("element 1 of tensors does not require grad"), the reference as its own candidate
    rejected. Only outputs autograd can differentiate are; the indices are judged exactly."""
    gates = ["CMP-01", "ORD-02"]
    for honest in (reference_as_candidate(tmp_path, ROW_MAX), CORE / "row_max_own_backward.py"):
        verdict = judge(honest, gates, ROW_MAX)
        assert verdict.native.accept is True
        assert all(g.status is Status.PASS for g in verdict.gates.values()), verdict.gates
    cmp = judge(CORE / "row_max_wrong_gradient.py", gates, ROW_MAX).gates["CMP-01"]
    assert cmp.status is Status.FAIL and "output 2" in cmp.detail, cmp.detail  # the gradient


def test_an_integer_output_takes_a_zero_cotangent_and_leaves_the_others_draws():
    values, index = torch.max(torch.randn(64, 8), dim=-1)
    mixed = GateContext.cotangents([values, index, values])
    floats = GateContext.cotangents([values, values, values])
    assert index.dtype == mixed[1].dtype and not mixed[1].any()
    assert torch.equal(mixed[0], floats[0]) and torch.equal(mixed[2], floats[2])


def declared_as(tmp_path: Path, problem: Path, declaration: str) -> Path:
    """`problem` with its KDIFF_BACKWARD line replaced by `declaration`."""
    lines = [f"KDIFF_BACKWARD = {declaration}" if line.startswith("KDIFF_BACKWARD") else line
             for line in problem.read_text().splitlines()]
    path = tmp_path / problem.name
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("problem, honest", [
    (ROPE, CORE / "rope_own_backward.py"),
    (ATTENTION, CORE / "attention_own_backward.py"),
], ids=["rope", "attention_float_mask"])
def test_an_input_declared_not_differentiable_is_asked_no_gradient(tmp_path, problem, honest):
    """RoPE's cos/sin tables and attention's float mask: an honest backward forms no gradient
    for them (None). Judged against every floating input (True), every gate but those without
    a gradient to compare failed it; judged against the inputs the problem names, it passes."""
    gates = ["CMP-01", "ORD-01", "ORD-02"]
    named = judge(honest, gates, problem)
    assert named.native.accept is True
    assert all(g.status is Status.PASS for g in named.gates.values()), named.gates
    every = judge(honest, ["CMP-01"], declared_as(tmp_path, problem, "True")).gates["CMP-01"]
    assert every.status is Status.FAIL, every.detail  # a table's gradient, asked and missing


def test_a_wrong_gradient_of_a_declared_input_still_fails():
    cmp = judge(CORE / "rope_wrong_sign_backward.py", ["CMP-01"], ROPE).gates["CMP-01"]
    assert cmp.status is Status.FAIL and "output 1" in cmp.detail, cmp.detail  # x's gradient


def test_a_declared_input_s_gradient_is_judged_and_the_others_are_not(tmp_path):
    """Naming the mask asks the honest kernel for a gradient it does not form: rejected, as a
    problem that declares the mask learned means it to be."""
    problem = declared_as(tmp_path, ATTENTION, '("q", "mask")')
    cmp = judge(CORE / "attention_own_backward.py", ["CMP-01"], problem).gates["CMP-01"]
    assert cmp.status is Status.FAIL and "output 2" in cmp.detail, cmp.detail  # the mask's


def flash_with(tmp_path: Path, name: str, line: str, replacement: str) -> Path:
    """The FlashAttention backward with one line of its source replaced: a defect."""
    source = FLASH.read_text()
    assert line in source
    path = tmp_path / f"attention_flash_{name}.py"
    path.write_text(source.replace(line, replacement))
    return path


def test_flashattention_s_row_term_formed_from_the_output_is_within_the_bound(tmp_path):
    """FlashAttention's backward forms D = rowsum(dO O), equal to softmax's rowsum(dP P) in
    exact arithmetic. At the first query of a causal mask (one key, P = 1) the reference's
    softmax backward cancels exactly, and its bound was almost nothing: the honest kernel
    failed CMP-03 at seq_len 9, 2.41x on that row's dQ (expected 0, got -4.0e-8, bound
    1.66e-8). The fused softmax backward is traced as its formula now, with the size of the
    terms it subtracts. A row term in bf16 or none at all, and NaN swallowed, still fail."""
    honest = judge(FLASH, ["CMP-03"], HEADS)
    assert honest.native.accept is True
    assert honest.gates["CMP-03"].status is Status.PASS, honest.gates["CMP-03"].detail
    row_term = "    return (do * o).sum(-1, keepdim=True)"
    for name, replacement in [
        ("bf16_d", "    return (do.bfloat16() * o.bfloat16()).sum(-1, keepdim=True).float()"),
        ("no_d", "    return torch.zeros_like(o[..., :1])"),
    ]:
        cmp = judge(flash_with(tmp_path, name, row_term, replacement), ["CMP-03"],
                    HEADS).gates["CMP-03"]
        assert cmp.status is Status.FAIL and "output 1" in cmp.detail, (name, cmp.detail)
    ds = "        ds = p * (do @ v.transpose(-2, -1) - row_term(do, o))"
    swallowing = flash_with(tmp_path, "nan_swallowing", ds, ds.replace(
        "ds = p * (do @ v.transpose(-2, -1) - row_term(do, o))",
        "ds = torch.nan_to_num(p * (do @ v.transpose(-2, -1) - row_term(do, o)))"))
    exc = judge(swallowing, ["EXC-01"], HEADS).gates["EXC-01"]
    assert exc.status is Status.FAIL and exc.signature == "nan_swallowed", exc.detail


@pytest.mark.parametrize("norm", ["layer_norm", "group_norm", "batch_norm"])
def test_a_normalisation_s_backward_where_its_terms_cancel_is_judged_against_their_size(
        tmp_path, norm):
    """A norm pooled over its groups gets a cotangent equal along each group, and its backward
    rstd (g - mean(g) - xhat mean(g xhat)) cancels to 0. The finite differences of aten's
    backward cancelled as dx does: honest fp32 backwards written out failed CMP-01 (LayerNorm
    6.69x: expected 0, got 4.7e-08, bound 7e-09; GroupNorm 3.15x) and PRC-03 (6.4e+33x at
    inputs x 1e-19; 30.3x), and for BatchNorm the judge's own reference used 35.4x its bound
    (CMP-01, CMP-02, PRC-01 under-specified). The backwards are traced as their formula now;
    the same kernels with their backward means in bf16 still fail."""
    problem, honest = CORE / f"{norm}_pooled_backward.py", CORE / f"{norm}_own_backward.py"
    judged = judge(honest, ["CMP-01", "PRC-03"], problem)
    assert judged.native.accept is True
    assert all(g.status is Status.PASS for g in judged.gates.values()), judged.gates
    mean = "    return t.mean(dims, keepdim=True)"
    source = honest.read_text()
    assert mean in source
    defective = tmp_path / f"{norm}_bf16_means.py"
    defective.write_text(source.replace(
        mean, "    return t.bfloat16().mean(dims, keepdim=True).float()"))
    judged = judge(defective, ["CMP-01"], problem)
    assert judged.native.accept is True  # the benchmark only checks the forward
    cmp = judged.gates["CMP-01"]
    assert cmp.status is Status.FAIL and "output 1" in cmp.detail, cmp.detail


class Attention(torch.nn.Module):
    def forward(self, q, k, v, mask, lengths):
        return q


class Varargs(torch.nn.Module):
    @staticmethod
    def forward(x, *rest):
        return x


ATTENTION_INPUTS = [torch.randn(2, 2), torch.randn(2, 2), torch.randn(2, 2),
                    torch.zeros(2, 2), torch.tensor([2, 2])]


@pytest.mark.parametrize("declared, positions", [
    (True, (0, 1, 2, 3)),  # every floating input, as before
    (("v", "q"), (0, 2)),  # by name, in input order whatever the declaration's
    ((2, "k"), (1, 2)),  # positions and names together
    ("q", (0,)),  # one name alone
])
def test_the_declaration_names_inputs_by_forward_name_or_position(declared, positions):
    parameters = ForwardParameters.of(Attention)
    assert parameters.names == ("q", "k", "v", "mask", "lengths")
    assert differentiated_inputs(declared, parameters, ATTENTION_INPUTS,
                                 Path("p.py")) == positions


@pytest.mark.parametrize("declared, cause", [
    (("q", "kk"), "names 'kk', which is not a parameter of Model.forward (q, k, v, mask, "
                  "lengths)"),
    ((5,), "names position 5, but get_inputs() gives 5 input(s) (positions 0 to 4)"),
    (("lengths",), "names 'lengths' (input 4), which is a tensor of dtype int64: only a "
                   "floating tensor has a gradient"),
    ((), "must be True or a non-empty tuple"),
    (1, "must be True or a non-empty tuple"),
    ((True,), "must be True or a non-empty tuple"),
])
def test_a_declaration_that_names_no_floating_input_is_one_line_naming_the_file(declared,
                                                                               cause):
    with pytest.raises(LoadError) as raised:
        differentiated_inputs(declared, ForwardParameters.of(Attention), ATTENTION_INPUTS,
                              Path("problems/attention.py"))
    message = str(raised.value)
    assert message.startswith("problems/attention.py: KDIFF_BACKWARD ") and cause in message
    assert "\n" not in message


def test_inputs_that_varargs_take_are_named_by_position():
    parameters = ForwardParameters.of(Varargs)
    assert parameters == ForwardParameters(("x",), True)
    inputs = [torch.randn(2), torch.randn(2)]
    assert differentiated_inputs((1,), parameters, inputs, Path("p.py")) == (1,)
    with pytest.raises(LoadError, match="named by position"):
        differentiated_inputs(("rest",), parameters, inputs, Path("p.py"))


def test_a_misdeclared_problem_is_an_error_of_the_problem_before_anything_is_judged(tmp_path):
    problem = declared_as(tmp_path, ROPE, '("x", "angles")')
    verdict = judge(CORE / "rope_own_backward.py", ["CMP-01"], problem)
    assert verdict.error == (f"{problem}: KDIFF_BACKWARD names 'angles', which is not a "
                             f"parameter of Model.forward (x, cos, sin)")
    assert verdict.native.accept is None and verdict.gates == {}


RESIDUAL = CORE / "residual_norm_backward.py"


@pytest.mark.parametrize("candidate", ["reference", "residual_norm_own_backward.py"])
def test_gradients_the_reference_returns_as_one_tensor_may_be_one_tensor(tmp_path, candidate):
    """x + r: autograd returns one gradient tensor for both addends. ORD-02 took the
    reference's sharing from its forward alone, so the reference as its own candidate, and a
    fused add-norm backward returning its one gradient twice, failed `output_aliasing`."""
    honest = (
        reference_as_candidate(tmp_path, RESIDUAL) if candidate == "reference" else CORE / candidate
    )
    ord02 = judge(honest, ["ORD-02"], RESIDUAL).gates["ORD-02"]
    assert ord02.status is Status.PASS, ord02.detail
    assert "output 3 shares storage with output 2" in ord02.detail, ord02.detail


def test_a_gradient_written_into_an_input_still_fails():
    ord02 = judge(CORE / "residual_norm_gradient_in_input.py", ["ORD-02"], RESIDUAL)
    result = ord02.gates["ORD-02"]
    assert (result.status, result.signature) == (Status.FAIL, "output_aliasing"), result
    assert "output 2 shares storage with input 0" in result.detail, result.detail


KINKED = '''
import torch


class Model(torch.nn.Module):
    def forward(self, x, p, q):
        return torch.relu(x), (p - q).abs().sum(-1), x.clamp(-0.5, 0.5)


KDIFF_BACKWARD = True


def get_inputs():
    return [torch.randn(8, 32), torch.randn(8, 32), torch.randn(8, 32)]


def get_init_inputs():
    return []
'''

KINKED_OWN_BACKWARD = '''
import torch


class Kinked(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, p, q):
        ctx.save_for_backward(x, p, q)
        return torch.relu(x), (p - q).abs().sum(-1), x.clamp(-0.5, 0.5)

    @staticmethod
    def backward(ctx, g_relu, g_l1, g_clamp):
        x, p, q = ctx.saved_tensors
        # other subgradients than autograd's at the kinks: 1 for ReLU at 0, the sign as
        # +-1 where p = q, and the clamp's bounds left out
        dx = torch.where(DX_RELU, g_relu, 0.0) + torch.where(x.abs() < 0.5, g_clamp, 0.0)
        dp = g_l1[:, None] * torch.where(p > q, 1.0, -1.0)
        return dx, dp, DQ


class ModelNew(torch.nn.Module):
    def forward(self, x, p, q):
        return Kinked.apply(x, p, q)
'''


@pytest.mark.parametrize("relu_mask, dq, honest", [
    ("x >= 0", "-dp", True),
    ("x > -1", "-dp", False),  # the gradient leaks through negative x
    ("x >= 0", "dp", False),  # q's gradient with p's sign
], ids=["other_subgradients", "relu_leaks", "sign_flipped"])
def test_a_backward_may_take_another_subgradient_at_a_kink(tmp_path, relu_mask, dq, honest):
    """ReLU, |p - q| and a clamp at their kinks: autograd takes the least-norm subgradient,
    an honest backward another (Liger-Kernel's TVD: -1/2 where p = q). Judged exactly, CMP-01's
    mostly-zero inputs failed it (976 of 1,024 elements) and PRC-03's inputs + 1e6 (ties of
    p and q after rounding); gradients wrong off the kinks still fail."""
    problem = tmp_path / "kinked.py"
    problem.write_text(KINKED)
    candidate = tmp_path / "kinked_own_backward.py"
    candidate.write_text(KINKED_OWN_BACKWARD.replace("DX_RELU", relu_mask).replace("DQ", dq))
    verdict = judge(candidate, ["CMP-01", "PRC-03"], problem)
    assert verdict.native.accept is True
    statuses = {g: r.status for g, r in verdict.gates.items()}
    if honest:
        assert set(statuses.values()) == {Status.PASS}, verdict.gates
    else:
        assert statuses["CMP-01"] is Status.FAIL, verdict.gates


COMPLEX_ROPE = '''
import torch


class Model(torch.nn.Module):
    def forward(self, q, freqs):
        qc = torch.view_as_complex(q.reshape(*q.shape[:-1], -1, 2))
        return torch.view_as_real(qc * freqs[:, None, :]).flatten(-2)


KDIFF_BACKWARD = ("q",)


def get_inputs():
    angles = torch.outer(torch.arange(8.0), 10000.0 ** -(torch.arange(8.0) / 8))
    return [torch.randn(8, 4, 16), torch.polar(torch.ones_like(angles), angles)]


def get_init_inputs():
    return []
'''

COMPLEX_ROPE_OWN_BACKWARD = '''
import torch


def rotate(x, f):
    xc = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2).contiguous())
    return torch.view_as_real(xc * f[:, None, :]).flatten(-2)


class Rope(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, freqs):
        ctx.save_for_backward(freqs)
        return rotate(q, freqs)

    @staticmethod
    def backward(ctx, g):
        (freqs,) = ctx.saved_tensors
        return rotate(g, BACKWARD_TABLE), None


class ModelNew(torch.nn.Module):
    def forward(self, q, freqs):
        return Rope.apply(q, freqs)
'''


@pytest.mark.parametrize("table, honest", [("freqs.conj()", True), ("freqs", False)],
                         ids=["rotated_back", "rotated_on"])
def test_a_real_vjp_through_complex_intermediates_is_judged(tmp_path, table, honest):
    """Llama 4's RoPE: real q, rotated as complex pairs by a complex table. Autograd's complex
    multiply conjugates the table in its backward, and the oracle applied aten's _conj to its
    real magnitude, which raises: every value gate skipped ("reference cannot run in
    float64"). A backward rotating the gradient forward, not back, fails."""
    problem = tmp_path / "complex_rope.py"
    problem.write_text(COMPLEX_ROPE)
    candidate = tmp_path / "complex_rope_own_backward.py"
    candidate.write_text(COMPLEX_ROPE_OWN_BACKWARD.replace("BACKWARD_TABLE", table))
    assert_cmp01_passes_or_fails_the_gradient(candidate, problem, honest)


LEAKY_BY_WHERE = '''
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.where(x > 0, x, 0.01 * x)


KDIFF_BACKWARD = True


def get_inputs():
    return [torch.randn(8, 32)]


def get_init_inputs():
    return []
'''

LEAKY_OWN_BACKWARD = '''
import torch


class Leaky(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.where(x > 0, x, 0.01 * x)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return torch.where(x >= 0, g, SLOPE * g)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return Leaky.apply(x)
'''


@pytest.mark.parametrize("slope, honest", [("0.01", True), ("0.1", False)],
                         ids=["other_side_at_0", "wrong_slope"])
def test_a_kink_the_reference_writes_with_where_is_open_in_its_backward(tmp_path, slope,
                                                                         honest):
    """Leaky ReLU written `where(x > 0, x, 0.01 x)`: its backward selects through the
    forward's mask, decided at x = 0, and CMP-01's mostly-zero inputs failed a backward
    taking the other side there; a backward with the wrong slope still fails."""
    problem = tmp_path / "leaky_by_where.py"
    problem.write_text(LEAKY_BY_WHERE)
    candidate = tmp_path / "leaky_own_backward.py"
    candidate.write_text(LEAKY_OWN_BACKWARD.replace("SLOPE", slope))
    assert_cmp01_passes_or_fails_the_gradient(candidate, problem, honest)


RELU_BY_MASK_PRODUCT = '''
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x * PRODUCT


KDIFF_BACKWARD = True


def get_inputs():
    return [torch.randn(8, 32)]


def get_init_inputs():
    return []
'''


@pytest.mark.parametrize("product", ["(x > 0)", "(x > 0).float()"], ids=["bool", "float"])
@pytest.mark.parametrize("slope, honest", [("0.0", True), ("0.1", False)],
                         ids=["other_side_at_0", "leaking_through_negatives"])
def test_a_kink_the_reference_writes_as_a_mask_product_is_open_in_its_backward(
        tmp_path, product, slope, honest):
    """ReLU written `x * (x > 0)`: its backward multiplies by the forward's mask, decided
    at x = 0, and CMP-01's mostly-zero inputs failed a backward taking the other side
    there (`x >= 0`); one letting a tenth of the gradient through negatives still fails."""
    problem = tmp_path / "relu_by_mask_product.py"
    problem.write_text(RELU_BY_MASK_PRODUCT.replace("PRODUCT", product))
    candidate = tmp_path / "relu_own_backward.py"
    candidate.write_text(LEAKY_OWN_BACKWARD.replace("0.01 * x", "0.0 * x")
                         .replace("SLOPE", slope))
    assert_cmp01_passes_or_fails_the_gradient(candidate, problem, honest)
