"""The bound formula and the structured mismatch report."""
import math

import pytest
import torch

from kdiff.numerics import tolerance


def test_bound_is_lambda_u_sqrt_n_scale():
    scale = torch.tensor([2.0])
    b = tolerance.bound(scale, 100, torch.float32)
    expected = tolerance.LAMBDA * 2.0 ** -24 * 10 * 2.0 + torch.finfo(torch.float32).tiny
    assert math.isclose(float(b), expected, rel_tol=1e-12)


def test_worst_case_bound_is_gamma_n_scale():
    scale = torch.tensor([2.0])
    b = tolerance.bound(scale, 100, torch.float32, tolerance.BoundModel.WORST_CASE)
    nu = 100 * 2.0 ** -24
    expected = nu / (1 - nu) * 2.0 + torch.finfo(torch.float32).tiny
    assert math.isclose(float(b), expected, rel_tol=1e-7)  # b is an fp32 tensor


def test_the_worst_case_is_gamma_n_exactly_where_1_01_n_u_falls_short():
    """gamma_N = N u / (1 - N u) is below 1.01 N u only while N u <= 1/101: bf16 chains of
    64 roundings (N u = 1/4) may err by 1/3, which 1.01 N u (0.2525) did not cover; from
    N u = 1 on nothing is bounded, yet an exact value (scale 0) stays exact."""
    u = tolerance.unit_roundoff(torch.bfloat16)
    assert tolerance.gamma(64, u) == pytest.approx(1 / 3)
    scale = torch.tensor([3.0, 0.0], dtype=torch.float64)
    b = tolerance.bound(scale, 64, torch.bfloat16, tolerance.BoundModel.WORST_CASE)
    assert float(b[0]) >= 1.0 - 1e-12  # 3 x 1/3
    past = tolerance.bound(scale, 256, torch.bfloat16, tolerance.BoundModel.WORST_CASE)
    assert math.isinf(float(past[0])) and float(past[1]) < 1e-30


def test_lower_precisions_get_proportionally_looser_bounds():
    scale = torch.full((1,), 1e6, dtype=torch.float64)  # the subnormal floor is negligible
    ratio = tolerance.bound(scale, 1, torch.float16) / tolerance.bound(scale, 1, torch.float32)
    assert math.isclose(float(ratio), 2.0 ** 13, rel_tol=1e-6)


def test_compare_names_the_worst_element():
    expected = torch.zeros(3, 4, dtype=torch.float64)
    got = expected.clone().float()
    got[2, 1] = 1e-3
    mm = tolerance.compare(got, expected, torch.full((3, 4), 1e-6, dtype=torch.float64))
    assert not mm.ok and mm.exceeded == 1 and mm.worst_index == (2, 1)
    assert "1/12 elements exceed the bound" in mm.describe()
    assert "index (2, 1)" in mm.describe()


def test_an_element_whose_bound_is_all_allowance_is_not_named_the_worst():
    """Where an element's bound is all allowance (the storage roundings) and its error within
    it, the ratio past the allowance was 0/0 = NaN: not counted as exceeding, but named the
    worst element of a failing trial ("worst nanx ... expected 0, got 0"), hiding the one that
    failed (FlagAttention's first CMP-01 failure)."""
    expected = torch.zeros(4, dtype=torch.float64)
    got = torch.tensor([0.0, 1e-3, 0.0, 0.0])
    allowance = torch.tensor([1e-6, 0.0, 0.0, 0.0], dtype=torch.float64)
    mm = tolerance.compare(got, expected, torch.full((4,), 1e-6, dtype=torch.float64),
                           allowance=allowance)
    assert mm.exceeded == 1 and mm.worst_index == (1,), mm.describe()
    assert math.isclose(mm.worst_ratio, 1e3, rel_tol=1e-6)  # 1e-3 in fp32


def test_nonfinite_output_where_oracle_is_finite_is_infinitely_wrong():
    expected = torch.ones(4, dtype=torch.float64)
    got = torch.tensor([1.0, float("nan"), 1.0, 1.0])
    mm = tolerance.compare(got, expected, torch.full((4,), 1e-3, dtype=torch.float64))
    assert mm.nonfinite_got == 1 and math.isinf(mm.worst_ratio)


def test_elements_where_the_oracle_is_not_finite_are_not_judged_here():
    expected = torch.tensor([1.0, float("inf")], dtype=torch.float64)
    got = torch.tensor([1.0, 0.0])
    mm = tolerance.compare(got, expected, torch.full((2,), 1e-3, dtype=torch.float64))
    assert mm.ok and mm.judged == 1


@pytest.mark.parametrize("allowed", [False, True])
@pytest.mark.parametrize("where, value, judged, nonfinite, exceeded", [
    ("got", math.nan, 4096, 1, 1),
    ("got", -math.inf, 4096, 1, 1),
    ("got", 1e-3, 4096, 0, 1),  # finite, past the bound
    ("expected", math.inf, 4095, 0, 0),  # not judged here (EXC-01's)
    ("bound", math.inf, 4095, 0, 0),
])
def test_one_element_hidden_in_an_equal_output_is_judged_as_it_is(
        where, value, judged, nonfinite, exceeded, allowed):
    """compare skips the element-by-element finiteness tests where a sum shows every value
    finite (tolerance.finite_sum): one non-finite element among 4096 equal ones must still
    be counted, judged and named as the worst, under either form of the bound."""
    expected = torch.linspace(-1, 1, 4096, dtype=torch.float64).reshape(64, 64)
    expected = expected.float().double()  # values an fp32 output holds exactly
    bound = torch.full_like(expected, 1e-6)
    got = expected.float()
    {"got": got, "expected": expected, "bound": bound}[where][37, 11] = value
    allowance = bound / 2 if allowed else None
    mm = tolerance.compare(got, expected, bound, allowance=allowance)
    assert (mm.judged, mm.nonfinite_got, mm.exceeded) == (judged, nonfinite, exceeded)
    if exceeded:
        assert mm.worst_index == (37, 11), mm.describe()


def test_finite_values_whose_sum_overflows_are_judged_element_by_element():
    """A sum of finite float64 values near the largest overflows: not a non-finite value."""
    expected = torch.tensor([1e308, 1e308, 0.0], dtype=torch.float64)
    assert not tolerance.finite_sum(expected)
    got = expected.clone()
    got[2] = 1.0
    mm = tolerance.compare(got, expected, torch.full((3,), 1e-3, dtype=torch.float64))
    assert (mm.judged, mm.exceeded, mm.worst_index) == (3, 1, (2,))


def _with_one_of_each(t: torch.Tensor) -> list[torch.Tensor]:
    """`t`, and `t` with one -inf, NaN or +inf hidden among its 4096 elements."""
    out = [t]
    for value in (-math.inf, math.nan, math.inf):
        hidden = t.clone()
        hidden.view(-1)[2048] = value
        out.append(hidden)
    return out


@pytest.mark.parametrize("t", [
    *_with_one_of_each(torch.linspace(-3, 3, 4096, dtype=torch.float64)),
    *_with_one_of_each(torch.full((64, 64), 6e4, dtype=torch.float16)),  # its sum overflows
    *_with_one_of_each(torch.complex(torch.randn(4096, dtype=torch.float64),
                                     torch.randn(4096, dtype=torch.float64))),
    torch.arange(-5, 5),  # an integer tensor keeps where's float result
], ids=lambda t: f"{t.dtype}")
def test_own_scale_read_back_is_the_element_by_element_scale(t):
    """A checking trace lets own_scale read a sum back (may_read) and skip its per-element
    test where every value is finite: the scale is the same, bit for bit, wherever one
    non-finite value hides, and a non-finite value's scale stays 0."""
    read = tolerance.own_scale(t, may_read=True)
    expected = tolerance.own_scale(t)
    assert read.dtype == expected.dtype and torch.equal(read, expected)
    if t.is_floating_point() or t.is_complex():
        assert bool((read[~torch.isfinite(t)] == 0).all())


class _PhaseSum(torch.nn.Module):
    """An angle state as Mamba-3's: a sum of phase steps, modulo 2 pi."""

    def forward(self, steps):
        return torch.remainder(steps.sum(-1), 2 * math.pi)


def _phase_evaluation(periods: dict[int, float]):
    from kdiff.judging.context import Evaluation
    from kdiff.numerics.oracle import run_oracle
    # Steps of PRC-03's 2^-63 that cancel to 2^-71, judged as bf16 arithmetic (a bf16
    # recast): a sum in another order, within bf16 rounding of it, may come out below zero,
    # and then at the turn, where bf16 rounds at the size of 2 pi.
    steps = torch.tensor([[1.0, -1.0 + 2.0 ** -8]], dtype=torch.bfloat16) * 2.0 ** -63
    oracle = run_oracle(_PhaseSum().double(), [steps], arithmetic=torch.bfloat16)
    reference = [_PhaseSum()(steps)]
    return Evaluation(oracle, reference, torch.bfloat16, periods=periods), oracle


def test_an_angle_output_is_judged_around_the_circle():
    """2 pi - tiny (stored in bf16: 6.28125) is the angle -tiny, within rounding of 2^-71
    when the problem declares the output an angle; a wrong angle still fails."""
    at_the_turn = torch.remainder(torch.tensor([-1e-21]), 2 * math.pi).to(torch.bfloat16)
    assert float(at_the_turn) == 6.28125
    declared, oracle = _phase_evaluation({0: 2 * math.pi})
    assert float(oracle.values[0]) == 2.0 ** -71
    assert declared.mismatches([at_the_turn])[0].ok
    assert not declared.mismatches([torch.tensor([0.5], dtype=torch.bfloat16)])[0].ok
    undeclared, _ = _phase_evaluation({})
    assert not undeclared.mismatches([at_the_turn])[0].ok


def test_whether_an_angle_is_at_a_turn_is_read_with_the_comparisons_bound_model():
    """An exact angle within the worst-case arithmetic bound of 0 but outside the
    probabilistic one: a result just under 2 pi (the angle -3e-7) is judged with the turn's
    rounding under the worst-case model, which reaches that far, and not under the
    probabilistic one, which does not."""
    from kdiff.judging.context import Evaluation
    from kdiff.numerics.oracle import OracleResult
    scale, depth = torch.ones(1, dtype=torch.float64), 1024  # 1.5e-5 against 6.2e-5
    probable = float(tolerance.bound(scale, depth, torch.float32))
    worst = float(tolerance.bound(scale, depth, torch.float32, tolerance.BoundModel.WORST_CASE))
    exact = worst - 1e-7
    assert probable < exact
    oracle = OracleResult([torch.tensor([exact], dtype=torch.float64)], [scale], [depth], [1.0],
                          [0.0])
    ev = Evaluation(oracle, [torch.zeros(1)], torch.float32, periods={0: 2 * math.pi})
    under_2pi = torch.tensor([2 * math.pi], dtype=torch.float32).nextafter(torch.zeros(1))
    assert float(tolerance.difference(under_2pi.double(), oracle.values[0], 2 * math.pi)) > worst
    assert ev.mismatches([under_2pi], tolerance.BoundModel.WORST_CASE)[0].ok
    assert not ev.mismatches([under_2pi])[0].ok


def test_an_angle_away_from_the_turn_keeps_its_own_bound():
    """Only where the exact value is within the arithmetic bound of a turn may a result err
    by a rounding at the period's size: elsewhere the bound is the undeclared one."""
    scale = torch.tensor([1e-12, 0.5, 1e-3], dtype=torch.float64)  # sums that cancel
    expected = torch.tensor([5e-20, 0.5, 2 * math.pi - 1e-3], dtype=torch.float64)
    arithmetic = tolerance.bound(scale, 1, torch.float32)
    extra = tolerance.turn_rounding(expected, arithmetic, 2 * math.pi, 2.0 ** -24)
    assert float(extra[0]) == 2.0 ** -24 * 2 * math.pi
    assert not bool(extra[1:].any())
    assert float(tolerance.difference(torch.tensor(6.28), torch.tensor(-3e-3),
                                      2 * math.pi)) < 1e-2


def test_a_complex_output_is_judged_component_by_component():
    """An error in the imaginary part alone is an error: `.to(torch.float64)` of a complex
    tensor keeps its real part only, and compared so, a kernel could return anything there."""
    expected = torch.tensor([1.0 + 2.0j, -3.0 + 0.5j], dtype=torch.complex128)
    bound = torch.full((2,), 1e-6, dtype=torch.float64)
    got = (expected + torch.tensor([0.0, 1e-3j], dtype=torch.complex128)).to(torch.complex64)
    m = tolerance.compare(got, expected, bound)
    assert not m.ok and m.judged == 4 and m.worst_index == (1, 1), m.describe()
    assert tolerance.compare(expected.to(torch.complex64), expected, bound).ok
