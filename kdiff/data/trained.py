"""A model's parameters as a trained one holds them. Some constructors set parameters to
values no seed moves: LayerNorm's, GroupNorm's and BatchNorm's weight to ones and bias to
zeros, a scale or a gate built with `torch.ones`. Every instance built at any seed holds
them, so a kernel that skips the multiply by one or the add of zero they stand for is right
on all of them and wrong for any model that was trained or loaded
(tests/hostile/skips_its_initial_parameters.py). `redraw_trainable` moves every trainable
floating parameter away from its initial value.

The reference and the candidate each redraw their own instance, in the judge and in the
worker: a parameter's draw is keyed by the values it was built with (and its dtype and
shape), so that the candidate's copy of a reference parameter, built with the same values at
the same seed as the benchmark's contract asks, is redrawn alike wherever it sits in its
module; equal ones (two LayerNorms' ones) are told apart by their names. That holds only
where every floating tensor the candidate holds (parameters, buffers, tensor attributes) is
one the reference holds, trainable where it is (`unpaired`): an honest kernel may hold a
weight as a buffer, transposed, cast or fused with another, or keep a parameter and compute
from a copy it made at init, and then neither instance is redrawn. Buffers are left as
built: a mask or a table a constructor computes is the problem's definition, not a trained
value, and a kernel may compute it rather than read it."""
from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from typing import Iterator

import torch

from kdiff.data.digest import digest
from kdiff.data.seeding import WIDE_SEEDS, generator

# The formats a training step updates parameters in (an fp8 weight is a quantized copy).
TRAINED_FORMATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


@dataclass(frozen=True)
class Held:
    """A floating tensor a module holds, as built: its qualified name, the digest of its
    values (with the seed, its dtype and shape), and whether a redraw moves it."""

    name: str
    digest: str
    trainable: bool


def _redrawable(model: torch.nn.Module) -> Iterator[tuple[str, torch.nn.Parameter]]:
    """The parameters a training step would change (requires_grad, in one of
    `TRAINED_FORMATS`), named, in registration order."""
    for name, p in model.named_parameters():
        if (p.requires_grad and p.dtype in TRAINED_FORMATS
                and not isinstance(p, torch.nn.parameter.UninitializedParameter)):
            yield name, p


def _floating(model: torch.nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    """Every floating tensor `model` holds, named: its parameters, its buffers and the
    tensors its modules hold as plain attributes (not those inside a list or a dict)."""
    attributes = (
        (f"{prefix}.{attr}" if prefix else attr, value)
        for prefix, module in model.named_modules()
        for attr, value in vars(module).items() if isinstance(value, torch.Tensor))
    seen: set[int] = set()
    for name, t in (*model.named_parameters(), *model.named_buffers(), *attributes):
        if (id(t) not in seen and t.is_floating_point()
                and not isinstance(t, torch.nn.parameter.UninitializedTensorMixin)):
            seen.add(id(t))
            yield name, t


def held(model: torch.nn.Module, seed: int) -> list[Held]:
    """The floating tensors `model` holds at `seed`, as built, the trainable ones marked."""
    moved = {id(p) for _, p in _redrawable(model)}
    return [Held(name, digest(seed, t.detach().cpu()), id(t) in moved)
            for name, t in _floating(model)]


def unpaired(reference: list[Held], candidate: list[Held]) -> str | None:
    """Why the candidate's tensors would not be redrawn as the reference's (a sentence), or
    None where they pair one for one: the same values built on each side, trainable on both
    or on neither, and where several trainable ones hold equal values, under the same
    names."""
    ours = Counter((t.digest, t.trainable) for t in reference)
    theirs = Counter((t.digest, t.trainable) for t in candidate)
    if ours != theirs:
        return (f"{sum((ours - theirs).values())} of the reference's {len(reference)} "
                f"floating tensors (parameters, buffers, attributes) have no copy among the "
                f"candidate's, held as it holds them, and {sum((theirs - ours).values())} of "
                f"the candidate's {len(candidate)} none among the reference's")
    for (key, moved), n in ours.items():
        # the trainable ones only: a buffer of equal values (BatchNorm's running_var, ones
        # as its weight is) is paired by value above, and is not redrawn
        names = sorted(t.name for t in reference if t.digest == key and t.trainable)
        if moved and n > 1 and names != sorted(
                t.name for t in candidate if t.digest == key and t.trainable):
            return (f"{n} trainable parameters built with equal values ({', '.join(names)} "
                    f"in the reference) are named otherwise in the candidate")
    return None


def redraw_trainable(model: torch.nn.Module, seed: int) -> None:
    """Each parameter of `model` that a training step would change (requires_grad, in one of
    `TRAINED_FORMATS`) moved, in place, by a normal draw as large as its own root mean
    square: a trained parameter differs from its initial value by about as much as the value
    itself. A parameter built as zeros (a bias) has no size of its own and moves by a unit
    normal, the scale of the normalised activations such a bias is added to."""
    params = dict(_redrawable(model))
    drawn = [t for t in held(model, seed) if t.trainable]
    repeated = {key for key, n in Counter(t.digest for t in drawn).items() if n > 1}
    with torch.no_grad():
        for t in drawn:
            p = params[t.name]
            built = p.detach().cpu()
            # equal values are told apart by name (which `unpaired` asks to agree): the order
            # they were registered in is a module's own
            label = f"{t.digest}:{t.name}" if t.digest in repeated else t.digest
            wide = hashlib.blake2b(label.encode(), digest_size=16).digest()
            # One temporary the parameter's size, in fp32 (fp64 for fp64): a model's largest
            # weight is drawn in the worker, under its memory cap.
            wider = torch.float64 if p.dtype == torch.float64 else torch.float32
            draw = torch.randn(built.shape, dtype=wider,
                               generator=generator(WIDE_SEEDS + int.from_bytes(wide, "little")))
            norm = torch.linalg.vector_norm(built, dtype=torch.float64).item()
            size = norm / built.numel() ** 0.5 if built.numel() else 0.0
            p.copy_(draw.mul_(size or 1.0).add_(built))
