"""examples/train: the chunked PyTorch reference mixers (the gated family's, Mamba-3's) against
the float64 oracles, the corpus split, bitwise resumption, and one training step on kdiff's
kernels against the reference mixer (the Triton interpreter, fp32, a tiny model)."""
from __future__ import annotations

import hashlib
import json
import math
import os
import sys
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"  # before kdiff.kernels decorate their kernels

import pytest
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "train"))

import data
import train
from mixers import GATED, MAMBA3_CHUNK, Family, Impl, Mamba3Call, chunked_recurrence
from model import CONFIGS, LanguageModel

from kdiff.kernels.gdn import gated_recurrence
from kdiff.kernels.mamba3 import mamba3_siso_recurrence
from kdiff.kernels.mamba3.problems import activations, sequence_inputs

FP32_U = 2.0 ** -24


def family_inputs(family: Family, B=2, T=32, H=2, K=8, V=4, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(B, T, H, K, generator=gen, dtype=torch.float64)
    k = F.normalize(torch.randn(B, T, H, K, generator=gen, dtype=torch.float64), dim=-1)
    v = torch.randn(B, T, H, V, generator=gen, dtype=torch.float64)
    gate = (K,) if family.per_channel else ()
    g = F.logsigmoid(torch.randn(B, T, H, *gate, generator=gen, dtype=torch.float64))
    beta = torch.rand(B, T, H, generator=gen, dtype=torch.float64) if family.delta else None
    return q, k, v, g, beta


@pytest.mark.parametrize("family", GATED)
def test_chunked_reference_is_the_recurrence(family):
    q, k, v, g, beta = family_inputs(family)
    T, K = q.shape[1], q.shape[-1]
    expected, _ = gated_recurrence(q, k, v, g, beta, K ** -0.5)
    got = chunked_recurrence(q, k, v, g, beta, K ** -0.5, chunk=8)
    # Both in float64 (chunked_recurrence computes in fp32 only when given lower precision:
    # here .float() would round, so compare its fp32 result at the fp32 bound). Each output is
    # a sum over at most T tokens of K-long products of terms of magnitude <= |q| |v| (unit
    # keys, decays <= 1, beta <= 1), so the forward error is within gamma_{T K} = T K u of
    # T max|q| max|v| (the triangular solve's factors are bounded by the same products).
    bound = T * K * FP32_U * T * q.abs().max() * v.abs().max()
    assert (got.double() - expected).abs().max() <= bound


def test_chunked_reference_catches_a_dropped_gate():
    family = Family.KDA
    q, k, v, g, beta = family_inputs(family)
    T, K = q.shape[1], q.shape[-1]
    expected, _ = gated_recurrence(q, k, v, g, beta, K ** -0.5)
    wrong = chunked_recurrence(q, k, v, torch.zeros_like(g), beta, K ** -0.5, chunk=8)
    bound = T * K * FP32_U * T * q.abs().max() * v.abs().max()  # as above
    assert (wrong.double() - expected).abs().max() > bound


def mamba3_depth(T: int, K: int, V: int, C: int) -> int:
    """The longest chain of roundings through Mamba-3's chunked recurrence in chunks of C
    (tests/test_mamba3.py's error model: every state map is non-expansive, so errors add up):
    (ceil(T / C) + 1) (K + V + 4 C)."""
    return (math.ceil(T / C) + 1) * (K + V + 4 * C)


def mamba3_inputs(B=2, T=80, Hqk=1, G=2, K=16, V=8, seed=0) -> list[torch.Tensor]:
    """The mixer's arguments in fp32 (kernels/mamba3's problem draw, activated as the layer
    does: q, k RMS-normed, dt = softplus, adt = -softplus(a) dt): q, k, v, adt, dt, trap,
    q_bias, k_bias, angles, D, z."""
    torch.manual_seed(seed)
    q, k, v, a, dt, trap, qb, kb, angles, D, z, *_ = sequence_inputs(B, T, Hqk, G, K, V)
    q, k, adt, dt = activations(q, k, a, dt)
    return [q, k, v, adt, dt, trap, qb, kb, angles, D, z]


def mamba3_reference_error(args) -> tuple[float, float]:
    """(max |mixer - oracle|, its bound): the reference mixer (fp32) against the float64
    oracle on the same fp32 inputs, from zero states. The bound is gamma_N max|oracle|,
    N = mamba3_depth at the mixer's chunk, gamma_N = 1.01 N u (fp32)."""
    got = Mamba3Call(Impl.TORCH)(*args)
    expected, _ = mamba3_siso_recurrence(*[x.double() for x in args])
    T, K, V = args[0].shape[1], args[0].shape[-1], args[2].shape[-1]
    N = mamba3_depth(T, K, V, MAMBA3_CHUNK["torch"])
    return ((got.double() - expected).abs().max().item(),
            1.01 * N * FP32_U * expected.abs().max().item())


def test_mamba3_chunked_reference_is_the_recurrence():
    """kernels/mamba3/chunked.py in fp32, as the mixer calls it (two chunks, the last ragged,
    two heads over one key head), within the fp32 bound of the float64 oracle."""
    err, bound = mamba3_reference_error(mamba3_inputs())
    assert err <= bound


# Mistakes a layer could make, each a dropped or altered gate (argument index, new value)
MAMBA3_MISTAKES = {
    "no output gate": (10, lambda z: None),                           # out = y, not y silu(z)
    "no decay": (3, torch.zeros_like),                                # alpha = 1
    "Euler rule": (5, lambda trap: torch.full_like(trap, 30.0)),     # lam = 1: Mamba-2's
    "no rotation": (8, torch.zeros_like),                             # a constant phase
}


@pytest.mark.parametrize("mistake", sorted(MAMBA3_MISTAKES))
def test_mamba3_reference_check_catches_a_dropped_gate(mistake):
    index, change = MAMBA3_MISTAKES[mistake]
    args = mamba3_inputs()
    wrong = list(args)
    wrong[index] = change(args[index])
    got = Mamba3Call(Impl.TORCH)(*wrong)
    expected, _ = mamba3_siso_recurrence(*[x.double() for x in args])
    _, bound = mamba3_reference_error(args)
    assert (got.double() - expected).abs().max().item() > bound


def test_mamba3_on_fla_is_a_clear_error():
    with pytest.raises(ValueError, match="fla has no Mamba-3"):
        Mamba3Call(Impl.FLA)
    with pytest.raises(SystemExit):  # argparse's error, before any corpus or model is built
        train.parse(["--family", "mamba3", "--mixer-impl", "fla", "--steps", "1",
                     "--out", "unused"])


def write_text_tree(root: Path, files: int = 120) -> Path:
    """Files of deterministic pseudo-text: enough that the ~2% held-out split is not empty."""
    gen = torch.Generator().manual_seed(1)
    words = [b"def", b"return", b"import", b"self", b"value", b"the", b"kernel", b"\n", b"    "]
    for i in range(files):
        picks = torch.randint(0, len(words), (400,), generator=gen).tolist()
        (root / f"m{i:03d}.py").write_bytes(b" ".join(words[p] for p in picks))
    return root


@pytest.fixture(scope="module")
def corpus_root(tmp_path_factory):
    return write_text_tree(tmp_path_factory.mktemp("text"))


def test_corpus_split_by_file_and_recorded(corpus_root, tmp_path):
    corpus = data.build(tmp_path / "a", [corpus_root], 1 << 20)
    again = data.build(tmp_path / "b", [corpus_root], 1 << 20)
    assert corpus.digest == again.digest
    manifest = json.loads(next((tmp_path / "a").glob("*/manifest.json")).read_text())
    splits = {e["split"] for e in manifest["files"]}
    assert splits == {"train", "held_out"}
    for entry in manifest["files"]:
        content = (corpus_root / entry["file"].split("/", 1)[1]).read_bytes()
        assert hashlib.sha256(content).hexdigest() == entry["sha256"]
        held = int(entry["sha256"][:2], 16) < data.HELD_OUT_PER_256
        assert (entry["split"] == "held_out") == held
    held_bytes = sum(len((corpus_root / e["file"].split("/", 1)[1]).read_bytes())
                     for e in manifest["files"] if e["split"] == "held_out")
    separators = sum(e["split"] == "held_out" for e in manifest["files"]) - 1
    assert len(corpus.held_out) == held_bytes + separators


def run_args(out: Path, corpus_root: Path, cache: Path, steps: int, seed: int = 0) -> list[str]:
    return ["--family", "gdn", "--mixer-impl", "torch", "--config", "tiny", "--steps", str(steps),
            "--batch-size", "2", "--seq-len", "16", "--warmup", "2", "--seed", str(seed),
            "--device", "cpu", "--out", str(out), "--checkpoint-every", "100",
            "--eval-every", "2", "--eval-batches", "1", "--corpus-cache", str(cache),
            "--corpus-root", str(corpus_root)]


def losses(out: Path) -> list[tuple[float, float | None]]:
    return [(r["loss"], r.get("held_out_loss"))
            for r in map(json.loads, (out / "log.jsonl").read_text().splitlines())]


def test_resumed_run_is_bitwise_the_uninterrupted_one(corpus_root, tmp_path):
    cache = tmp_path / "cache"
    assert train.main(run_args(tmp_path / "whole", corpus_root, cache, 4)) == 0
    # the interrupted run: stopped by its time limit after step 2 (2 of 4), then resumed
    interrupted = run_args(tmp_path / "parts", corpus_root, cache, 4)
    train.main(interrupted + ["--time-limit", "0"])
    train.main(interrupted + ["--time-limit", "0"])
    assert len(losses(tmp_path / "parts")) == 2
    assert train.main(interrupted) == 0
    whole = losses(tmp_path / "whole")
    assert len(whole) == 4 and all(torch.isfinite(torch.tensor(x)) for x, _ in whole)
    assert losses(tmp_path / "parts") == whole
    train.main(run_args(tmp_path / "other", corpus_root, cache, 2, seed=1))
    assert losses(tmp_path / "other") != whole[:2]  # the comparison can tell runs apart


# The sequence length of the training-step test: 16 for the gated family (one 16-token chunk
# of our kernels, the torch reference's chunk); 24 for Mamba-3 (our kernels' CPU chunk of 16
# then a ragged 8, against the reference's one chunk of 64).
STEP_T = {Family.MAMBA3: 24}


def step_with(family: Family, impl: Impl) -> tuple[float, torch.Tensor]:
    torch.manual_seed(0)
    model = LanguageModel(CONFIGS["tiny"], family, impl)
    T = STEP_T.get(family, 16)
    x = torch.randint(0, 256, (2, T + 1), generator=torch.Generator().manual_seed(0))
    loss = model(x[:, :-1], x[:, 1:])
    loss.backward()
    grads = torch.cat([p.grad.flatten() for p in model.parameters()])
    return loss.item(), grads


def tiny_chain_length(T: int, family: Family = Family.GDN) -> int:
    """The longest chain of rounded operations from the tokens to the loss of the tiny model
    at sequence length T: per layer the q/k/v, o and MLP projections (d, d, d, hidden long
    dots) and the recurrence (T tokens of K-long products), then the head (d), the
    log-sum-exp over the 256 bytes and the mean over the 2 x T targets. For Mamba-3 the
    recurrence is mamba3_depth at the longer of the two sides' chunks (the reference's 64)
    plus T (the backward's reverse sum of the phase over the sequence, test_mamba3.py), and
    the RMS norm of q and k (K long) comes before it."""
    cfg = CONFIGS["tiny"]
    if family is Family.MAMBA3:
        K, V = cfg.head_dim, cfg.head_dim // 2
        recurrence = K + mamba3_depth(T, K, V, MAMBA3_CHUNK["torch"]) + T
    else:
        recurrence = T * cfg.head_dim
    layer = 3 * cfg.d_model + cfg.mlp_hidden + recurrence
    return cfg.n_layers * layer + cfg.d_model + cfg.vocab + 2 * T


@pytest.mark.parametrize("family", [
    Family.GDN,
    pytest.param(Family.SIMPLE_GLA, marks=pytest.mark.slow),
    pytest.param(Family.GLA, marks=pytest.mark.slow),
    pytest.param(Family.KDA, marks=pytest.mark.slow),
    Family.MAMBA3])
def test_a_step_on_our_kernels_is_the_reference_step(family):
    ours_loss, ours_grads = step_with(family, Impl.OURS)
    ref_loss, ref_grads = step_with(family, Impl.TORCH)
    assert torch.isfinite(torch.tensor(ours_loss)) and torch.isfinite(ours_grads).all()
    # Both fp32; a first-order forward error bound gamma_n = n u on the loss (relative) and
    # twice the chain for the gradients (the backward retraces it); each implementation is
    # within it of the exact model, so they are within twice it of each other.
    n = tiny_chain_length(STEP_T.get(family, 16), family)
    assert abs(ours_loss - ref_loss) <= 2 * n * FP32_U * abs(ref_loss)
    assert (ours_grads - ref_grads).abs().max() <= 2 * (2 * n) * FP32_U * ref_grads.abs().max()


def test_compare_reports_identity_gap_noise_and_non_finite(tmp_path):
    import compare

    def write(runs, name, values):
        folder = runs / f"gdn-{name}"
        folder.mkdir(parents=True)
        (folder / "log.jsonl").write_text("".join(
            json.dumps({"step": i, "loss": v, "finite": math.isfinite(v),
                        "lr": min(1.0, (i + 1) / 5)}) + "\n"
            for i, v in enumerate(values)))

    base = [5.0 - 0.01 * i for i in range(40)]
    for runs, ref in ((tmp_path / "a", [v + 0.001 for v in base]),
                      (tmp_path / "b", [v + 0.001 for v in base[:-1]] + [math.nan])):
        write(runs, "ours", base)
        write(runs, "ours-again", base[:-1] + [base[-1] + 1e-7])
        write(runs, "ref", ref)
        write(runs, "ours-seed1", [v + 0.01 for v in base])
    clean, _ = compare.family_figures(tmp_path / "a", "gdn")
    assert clean.bitwise_identical is False
    assert clean.gap_to_reference == pytest.approx(0.001)
    assert clean.run_to_run_noise == pytest.approx(0.01)
    assert clean.overlap_within_noise is True
    broken, _ = compare.family_figures(tmp_path / "b", "gdn")
    assert broken.non_finite == {"ours": [], "ours-again": [], "ref": [39], "ours-seed1": []}
    assert broken.overlap_within_noise is False
    # a reference stopped after its first step (autotuning) is no evidence of overlap
    write(tmp_path / "c", "ours", base)
    write(tmp_path / "c", "ref", base[:1])
    write(tmp_path / "c", "ours-seed1", [v + 0.01 for v in base])
    short, _ = compare.family_figures(tmp_path / "c", "gdn")
    assert short.common_steps == 1
    assert short.gap_to_reference is None and short.overlap_within_noise is None
    # runs cut by time limits are compared over the steps all of them logged, once those pass
    # the warm-up (5 steps here) by a smoothing window
    for n, judged in ((24, False), (25, True)):
        write(tmp_path / f"e{n}", "ours", base)
        write(tmp_path / f"e{n}", "ours-again", base[:n + 3])
        write(tmp_path / f"e{n}", "ref", [v + 0.001 for v in base[:n]])
        write(tmp_path / f"e{n}", "ours-seed1", [v + 0.01 for v in base[:n + 1]])
        cut, _ = compare.family_figures(tmp_path / f"e{n}", "gdn")
        assert cut.common_steps == n
        assert (cut.overlap_within_noise, cut.bitwise_identical) == (
            (True, True) if judged else (None, None))
    # held-out losses are compared at the last step every run evaluated
    for name, evals in (("ours", {9: 3.0, 19: 2.0}), ("ref", {9: 3.1, 19: 2.1, 39: 1.0})):
        log = tmp_path / "d" / f"gdn-{name}" / "log.jsonl"
        log.parent.mkdir(parents=True)
        log.write_text("".join(json.dumps({"step": i, "loss": 1.0, "finite": True,
                                           **({"held_out_loss": evals[i]} if i in evals else {})})
                               + "\n" for i in range(40)))
    held, _ = compare.family_figures(tmp_path / "d", "gdn")
    assert held.held_out_step == 19 and held.held_out == {"ours": 2.0, "ref": 2.1}


def test_throughput_is_read_from_the_logs_after_the_first_steps(tmp_path):
    import compare

    # the first steps compile and autotune (a 1.1B run on fla's kernels: 115 s for step 0);
    # the run on the right was killed while it wrote its checkpoint, so it has no summary
    for name, rates in (("ours", [10.0] * 5 + [40.0, 42.0, 44.0]), ("fla", [0.1] + [41.0] * 6)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "log.jsonl").write_text("".join(
            json.dumps({"step": i, "loss": 1.0, "finite": True, "tokens_per_s": r}) + "\n"
            for i, r in enumerate(rates)))
    figures = compare.throughput(tmp_path / "ours", tmp_path / "fla")
    assert figures[str(tmp_path / "ours")] == {"steps": 8, "median_tokens_per_s": 42.0}
    assert figures[str(tmp_path / "fla")] == {"steps": 7, "median_tokens_per_s": 41.0}
