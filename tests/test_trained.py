"""Parameters redrawn as a trained model's (kdiff.data.trained): the candidate's copy of a
reference parameter is redrawn alike wherever it sits, a parameter built as ones or zeros
moves, and two modules' tensors pair only one for one."""
from __future__ import annotations

import torch

from kdiff.data.seeding import set_seed
from kdiff.data.trained import Held, held, redraw_trainable, unpaired


class Reference(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)
        self.norm = torch.nn.LayerNorm(8)
        self.fixed = torch.nn.Parameter(torch.ones(3), requires_grad=False)


class Candidate(torch.nn.Module):
    """The reference's parameters built in the same order, held elsewhere and registered in
    another order, with a scratch parameter of its own first."""

    def __init__(self):
        super().__init__()
        self.scratch = torch.nn.Parameter(torch.zeros(2))
        proj = torch.nn.Linear(8, 8)
        norm = torch.nn.LayerNorm(8)
        self.norm_weight, self.norm_bias = norm.weight, norm.bias
        self.proj_weight, self.proj_bias = proj.weight, proj.bias


def test_a_copy_of_a_parameter_is_redrawn_alike_wherever_it_sits():
    set_seed(7)
    reference = Reference()
    set_seed(7)
    candidate = Candidate()
    built = reference.proj.weight.detach().clone()
    redraw_trainable(reference, 7)
    redraw_trainable(candidate, 7)
    assert torch.equal(candidate.proj_weight, reference.proj.weight)
    assert torch.equal(candidate.proj_bias, reference.proj.bias)
    assert torch.equal(candidate.norm_weight, reference.norm.weight)
    assert torch.equal(candidate.norm_bias, reference.norm.bias)
    assert not torch.equal(reference.proj.weight, built)
    # the affine built as ones and zeros moves by about its own size (one, for the zeros)
    assert (reference.norm.weight - 1).abs().max() > 0.5
    assert (reference.norm.bias).abs().max() > 0.5
    assert torch.equal(reference.fixed, torch.ones(3))  # not trainable: left as built


def test_another_seed_redraws_otherwise():
    set_seed(7)
    a, b = Reference(), Reference()
    redraw_trainable(a, 7)
    redraw_trainable(b, 8)
    assert not torch.equal(a.norm.weight, b.norm.weight)


def test_tensors_pair_only_one_for_one():
    """Where they do not, an honest candidate's would be redrawn unlike the reference's."""
    set_seed(7)
    reference = held(Reference(), 7)
    set_seed(7)
    candidate = held(Candidate(), 7)
    assert unpaired(reference, reference) is None
    # the candidate's scratch zeros, and the reference's frozen ones it does not hold
    assert unpaired(reference, candidate) == (
        "1 of the reference's 5 floating tensors (parameters, buffers, attributes) have no "
        "copy among the candidate's, held as it holds them, and 1 of the candidate's 5 none "
        "among the reference's")
    fixed = next(t for t in reference if t.name == "fixed")
    own = [t for t in candidate if t.name != "scratch"]
    assert unpaired(reference, [*own, fixed]) is None
    assert unpaired(reference, [*own, Held("fixed", fixed.digest, True)]) is not None  # trained
    twins = [Held("a.weight", "ones", True), Held("b.weight", "ones", True)]
    assert unpaired(twins, twins[::-1]) is None  # equal values pair by name
    assert "named otherwise" in unpaired(twins, [twins[0], Held("c.weight", "ones", True)])


class NormsOfOneWidth(torch.nn.Module):
    """BatchNorm's running_var (a buffer) and weight, and LayerNorm's weight: all built as
    ones of one shape (KernelBench level 2's 11_ConvTranspose2d_BatchNorm_Tanh_MaxPool_GroupNorm)."""

    def __init__(self):
        super().__init__()
        self.batch_norm = torch.nn.BatchNorm1d(8)
        self.layer_norm = torch.nn.LayerNorm(8)


def test_a_buffer_equal_to_trainable_twins_leaves_them_paired():
    set_seed(7)
    built = held(NormsOfOneWidth(), 7)
    assert unpaired(built, built) is None
