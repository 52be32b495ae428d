"""The bound formula and the structured mismatch report."""
import math

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
    expected = tolerance.WORST_CASE_C * 2.0 ** -24 * 100 * 2.0 + torch.finfo(torch.float32).tiny
    assert math.isclose(float(b), expected, rel_tol=1e-12)


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
