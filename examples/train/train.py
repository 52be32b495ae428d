"""Train a byte-level decoder language model whose token mixer is one of the gated linear
recurrence family or Mamba-3, on kdiff's kernels (--mixer-impl ours), fla's (fla; not for
Mamba-3, which fla lacks) or chunked PyTorch (torch). bf16 autocast over fp32 master weights
(fp32 on the CPU), AdamW, a fixed seed, a data order fixed by the seed (data.batch), a JSONL
log of every step, and checkpoints from which a run resumes bitwise identically.
docs/training.md has the commands.

    python examples/train/train.py --family gdn --mixer-impl ours --config 100m --steps 300 \
        --out runs/gdn-ours
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import data
import torch
from mixers import Family, Impl, Mamba3Call
from model import CONFIGS, LanguageModel

WARMUP_STEPS_EXCLUDED = 5  # throughput leaves out the first steps (Triton compilation, caches)
NON_FINITE_EXIT = 3


def parse(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--family", type=Family, choices=list(Family), required=True)
    p.add_argument("--mixer-impl", type=Impl, choices=list(Impl), default=Impl.OURS)
    p.add_argument("--config", choices=sorted(CONFIGS), default="tiny")
    p.add_argument("--steps", type=int, required=True,
                   help="the run's total steps (the learning-rate schedule's length)")
    p.add_argument("--until", type=int, default=None,
                   help="stop after this many steps (default --steps), the schedule unchanged")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--seq-len", type=int, default=2048)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--precision", choices=["bf16", "fp32"], default=None,
                   help="bf16 autocast over fp32 weights (default on CUDA) or fp32 throughout")
    p.add_argument("--out", type=Path, required=True, help="run folder: log, checkpoint, summary")
    p.add_argument("--checkpoint-every", type=int, default=100)
    p.add_argument("--time-limit", type=float, default=None,
                   help="seconds: checkpoint and stop after the step that passes it")
    p.add_argument("--eval-every", type=int, default=50)
    p.add_argument("--eval-batches", type=int, default=4)
    p.add_argument("--corpus-cache", type=Path, default=Path(".cache/train-corpus"))
    p.add_argument("--corpus-bytes", type=int, default=64 << 20)
    p.add_argument("--corpus-root", type=Path, action="append", default=None)
    args = p.parse_args(argv)
    if args.family is Family.MAMBA3:
        try:
            Mamba3Call(args.mixer_impl)
        except ValueError as e:  # fla: an error before the corpus or the model is built
            p.error(str(e))
    args.until = args.steps if args.until is None else min(args.until, args.steps)
    args.precision = args.precision or ("bf16" if args.device.startswith("cuda") else "fp32")
    return args


def learning_rate(args, step: int) -> float:
    """Linear warmup, then cosine decay to a tenth."""
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    progress = (step - args.warmup) / max(1, args.steps - args.warmup)
    return args.lr * (0.1 + 0.45 * (1 + math.cos(math.pi * min(1.0, progress))))


def build(args):
    torch.manual_seed(args.seed)
    with torch.device(args.device):  # initialised where it runs: 1.1B on the host took long
        model = LanguageModel(CONFIGS[args.config], args.family, args.mixer_impl)
    decay = [p for p in model.parameters() if p.dim() == 2]
    rest = [p for p in model.parameters() if p.dim() != 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                                   {"params": rest, "weight_decay": 0.0}],
                                  lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    return model, optimizer


def autocast(args):
    return torch.autocast(torch.device(args.device).type, dtype=torch.bfloat16,
                          enabled=args.precision == "bf16")


def save(path: Path, model, optimizer, step: int) -> None:
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step,
             "rng": torch.get_rng_state(),
             "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None}
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    tmp.replace(path)  # a call killed while saving leaves the previous checkpoint whole


def resume(path: Path, model, optimizer, log: Path) -> int:
    """The step to continue from (0 without a checkpoint); the log keeps the steps before it."""
    if not path.exists():
        log.unlink(missing_ok=True)
        return 0
    state = torch.load(path, map_location="cpu", weights_only=False)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    torch.set_rng_state(state["rng"])
    if state["cuda_rng"] is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda_rng"])
    step = state["step"]
    if log.exists():
        kept = [line for line in log.read_text().splitlines() if json.loads(line)["step"] < step]
        log.write_text("".join(line + "\n" for line in kept))
    return step


@torch.no_grad()
def evaluate(args, model, held_out) -> float:
    losses = []
    for i in range(args.eval_batches):  # the same held-out windows at every evaluation
        x, y = data.batch(held_out, args.seed + 1, i, args.batch_size, args.seq_len)
        with autocast(args):
            losses.append(model(x.to(args.device), y.to(args.device)).item())
    return sum(losses) / len(losses)


def train(args) -> dict:
    if args.device.startswith("cuda"):
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True, warn_only=True)
        # no NaN-fill of every torch.empty: the fills would be timed in the tokens/s (a kernel
        # reading a buffer it never wrote shows as runs that differ, ours against ours-again)
        torch.utils.deterministic.fill_uninitialized_memory = False
    corpus = data.build(args.corpus_cache, args.corpus_root or data.default_roots(),
                        args.corpus_bytes)
    model, optimizer = build(args)
    args.out.mkdir(parents=True, exist_ok=True)
    log_path, ckpt = args.out / "log.jsonl", args.out / "checkpoint.pt"
    start = resume(ckpt, model, optimizer, log_path)
    params = sum(p.numel() for p in model.parameters())
    tokens_per_step = args.batch_size * args.seq_len
    began, step, rates, status = time.perf_counter(), start, [], "done"
    with log_path.open("a") as log:
        while step < args.until:
            t0 = time.perf_counter()
            x, y = data.batch(corpus.train, args.seed, step, args.batch_size, args.seq_len)
            for group in optimizer.param_groups:
                group["lr"] = learning_rate(args, step)
            with autocast(args):
                loss = model(x.to(args.device), y.to(args.device))
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            finite = bool(torch.isfinite(loss)) and bool(torch.isfinite(grad_norm))
            if finite:
                optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            loss_value = loss.item()  # synchronises: the step's time is the device's
            seconds = time.perf_counter() - t0
            record = {"step": step, "loss": loss_value, "grad_norm": grad_norm.item(),
                      "finite": finite, "lr": learning_rate(args, step),
                      "tokens_per_s": tokens_per_step / seconds}
            step += 1
            if step - start > WARMUP_STEPS_EXCLUDED:
                rates.append(record["tokens_per_s"])
            if args.eval_every and (step % args.eval_every == 0 or step == args.until):
                record["held_out_loss"] = evaluate(args, model, corpus.held_out)
            log.write(json.dumps(record) + "\n")
            log.flush()
            if not finite:
                status = "non-finite"
                break
            out_of_time = (args.time_limit is not None
                           and time.perf_counter() - began > args.time_limit)
            if step % args.checkpoint_every == 0 or step == args.until or out_of_time:
                save(ckpt, model, optimizer, step)
            if out_of_time:
                status = "time-limit"
                break
    rates.sort()
    summary = {"family": args.family.value, "mixer_impl": args.mixer_impl.value,
               "config": args.config, "parameters": params, "precision": args.precision,
               "seed": args.seed, "corpus_digest": corpus.digest, "step": step,
               "steps": args.steps, "status": status, "device": _device_name(args.device),
               "tokens_per_step": tokens_per_step,
               "median_tokens_per_s": rates[len(rates) // 2] if rates else None}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary


def _device_name(device: str) -> str:
    return torch.cuda.get_device_name(device) if device.startswith("cuda") else "cpu"


def main(argv=None) -> int:
    summary = train(parse(argv))
    print(json.dumps(summary))
    return NON_FINITE_EXIT if summary["status"] == "non-finite" else 0


if __name__ == "__main__":
    sys.exit(main())
