"""Whether a change to the float64 oracle's trace left every result the same, bit for bit:
`record` runs `run_oracle` on a wide set of problems and input draws and saves every field of
each OracleResult; `compare` reads two such files and names each field that differs in any bit.

    python benchmarks/oracle_equivalence.py record /tmp/before.pt
    python benchmarks/oracle_equivalence.py compare /tmp/before.pt /tmp/after.pt

The set: the level 1 and 2 problems the shipped corpus (kernels/runs) judges, the core test
fixtures, and the Mamba-3 and GDN problems at their CPU sizes; per problem the benchmark's
get_inputs() at two seeds, with cotangents for a backward problem (KDIFF_BACKWARD), with NaN
and +-Inf injected, with values near the largest and the smallest normal of the working
format, traced checking and trusting (one seed), and depths alone (magnitudes=False).
"""

from __future__ import annotations

import argparse
import re
import struct
import sys
import time
from dataclasses import fields
from pathlib import Path
from typing import Any, Callable

import torch

from kdiff.data.differentiated import (
    DECLARATION,
    ForwardParameters,
    declares_backward,
    differentiated_inputs,
)
from kdiff.data.problem import load_problem
from kdiff.numerics.oracle import OracleResult, run_oracle

ROOT = Path(__file__).resolve().parent.parent
SEEDS = (0, 1)


def problems() -> list[Path]:
    """Every problem of the set, in a fixed order."""
    used = sorted(
        {
            (m.group(1), m.group(2))
            for p in (ROOT / "kernels" / "runs").rglob("*.py")
            if (m := re.match(r"level_(\d)_problem_(\d+)_", p.name))
        }
    )
    found = []
    for level, number in used:
        found += sorted((ROOT / "kernels" / "KernelBench" / f"level{level}").glob(f"{number}_*.py"))
    found += sorted((ROOT / "tests" / "fixtures" / "core").glob("*.py"))
    # the other fixtures' problems: precisions, quantizations, complex values, a running product
    found += sorted(
        p
        for p in (ROOT / "tests" / "fixtures").glob("*/*.py")
        if p.parent.name not in ("core", "kbf_checkout", "kernelbench_checkout")
        and "def get_inputs" in p.read_text()
    )
    found += sorted(
        (ROOT / "kernels" / "mamba3" / "kernelbench" / "KernelBench" / "level3").glob("*.py")
    )
    found += sorted(
        (ROOT / "kernels" / "gdn" / "kernelbench" / "KernelBench" / "level3").glob("*.py")
    )
    # problems written for this check: decisions, steps, kinks, alternatives, random draws
    found += sorted((ROOT / "benchmarks" / "oracle_problems").glob("*.py"))
    return found


def _floating(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and (x.is_floating_point() or x.is_complex())


def _injected(inputs: list[Any]) -> list[Any]:
    """NaN, +Inf and -Inf at three elements of each floating input."""
    out = []
    for x in inputs:
        if _floating(x) and x.numel() >= 3:
            x = x.clone()
            flat = x.view(-1) if x.is_contiguous() else x.reshape(-1)
            flat[0], flat[x.numel() // 2], flat[-1] = math_nan, math_inf, -math_inf
            x = flat.view(x.shape)
        out.append(x)
    return out


math_nan, math_inf = float("nan"), float("inf")


def _scaled_to(target: Callable[[torch.dtype], float]) -> Callable[[list[Any]], list[Any]]:
    """Each floating input scaled so that its largest |value| is `target` of its format."""

    def scale(inputs: list[Any]) -> list[Any]:
        out = []
        for x in inputs:
            if _floating(x) and x.numel() and not x.is_complex():
                largest = float(x.detach().abs().double().max())
                if largest > 0:
                    x = (x.double() * (target(x.dtype) / largest)).to(x.dtype)
            out.append(x)
        return out

    return scale


VARIANTS: dict[str, Callable[[list[Any]], list[Any]]] = {
    "nonfinite": _injected,
    "near_max": _scaled_to(lambda d: torch.finfo(d).max / 4),
    "near_tiny": _scaled_to(lambda d: torch.finfo(d).tiny * 4),
}


def _draw(problem, seed: int) -> tuple[torch.nn.Module, dict[str, torch.dtype], list[Any]]:
    torch.manual_seed(seed)
    model = problem.Model(*problem.get_init_inputs())
    stored = {n: t.dtype for n, t in [*model.named_parameters(), *model.named_buffers()]}
    inputs = problem.get_inputs()
    return model, stored, inputs


def _cotangents(model: torch.nn.Module, inputs: list[Any]) -> list[torch.Tensor]:
    with torch.no_grad():
        out = model(*[x.double() if _floating(x) and not x.is_complex() else x for x in inputs])
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    g = torch.Generator().manual_seed(4242)
    return [torch.randn(o.shape, generator=g, dtype=torch.float64) for o in outs]


def _result(*args: Any, **kwargs: Any) -> Any:
    """run_oracle's result as a dict of its fields, or the error it raised as a line."""
    try:
        result: OracleResult = run_oracle(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the error is a result too
        return f"{type(exc).__name__}: {exc}"
    return {f.name: getattr(result, f.name) for f in fields(result)}


def record(path: str, only: str | None) -> None:
    results: dict[str, Any] = {}
    for file in problems():
        if only and only not in str(file):
            continue
        name = str(file.relative_to(ROOT))
        started = time.perf_counter()
        try:
            problem = load_problem(file)
            model, stored, inputs = _draw(problem, 0)
        except BaseException as exc:  # noqa: BLE001 - a fixture that exits or raises
            results[name] = f"{type(exc).__name__}: {exc}"
            continue
        declared = problem.declared(DECLARATION, False)
        differentiated = None
        if declares_backward(declared):
            differentiated = differentiated_inputs(
                declared, ForwardParameters.of(problem.Model), inputs, file
            )
        for seed in SEEDS:
            model, stored, inputs = _draw(problem, seed)
            double = model.double()
            draws = {
                "": inputs,
                **({name: v(inputs) for name, v in VARIANTS.items()} if seed == SEEDS[0] else {}),
            }
            for variant, xs in draws.items():
                modes = [("checking", {})]
                if seed == SEEDS[0] and not variant:
                    modes += [("trusting", {"trusting": True}), ("depths", {"magnitudes": False})]
                cotangents = _cotangents(double, xs) if differentiated is not None else None
                for mode, options in modes:
                    key = f"{name}|seed={seed}|{variant or 'plain'}|{mode}"
                    torch.manual_seed(1000 + seed)
                    results[key] = _result(
                        double,
                        xs,
                        cotangents,
                        stored=stored,
                        differentiated=differentiated,
                        **options,
                    )
        print(f"{name}: {time.perf_counter() - started:.1f} s", flush=True)
    torch.save(results, path)
    print(f"{len(results)} results in {path}")


def _bits(t: torch.Tensor) -> torch.Tensor:
    t = t.detach().cpu().contiguous()
    if t.is_complex():
        t = torch.view_as_real(t.resolve_conj()).contiguous()
    t = t.resolve_neg()
    if t.dtype == torch.bool:
        return t
    size = t.element_size()
    return t.view({8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.int8}[size])


def differences(a: Any, b: Any, where: str) -> list[str]:
    """Each place `a` and `b` differ in any bit (a NaN equals a NaN of the same bits)."""
    if type(a) is not type(b):
        return [f"{where}: {type(a).__name__} vs {type(b).__name__}"]
    if isinstance(a, torch.Tensor):
        if a.dtype != b.dtype or a.shape != b.shape or a.device != b.device:
            return [f"{where}: {a.dtype}{tuple(a.shape)} vs {b.dtype}{tuple(b.shape)}"]
        return [] if torch.equal(_bits(a), _bits(b)) else [f"{where}: values differ"]
    if isinstance(a, float):
        same = struct.pack("<d", a) == struct.pack("<d", b)
        return [] if same else [f"{where}: {a!r} vs {b!r}"]
    if isinstance(a, dict):
        if a.keys() != b.keys():
            return [f"{where}: keys {sorted(set(a) ^ set(b))}"]
        return [d for k in a for d in differences(a[k], b[k], f"{where}.{k}")]
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return [f"{where}: {len(a)} vs {len(b)} items"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{where}[{i}]")]
    return [] if a == b else [f"{where}: {a!r} vs {b!r}"]


def compare(before: str, after: str) -> int:
    a, b = torch.load(before, weights_only=False), torch.load(after, weights_only=False)
    found = differences(a, b, "")
    for line in found[:50]:
        print(line)
    errors = sum(isinstance(v, str) for v in a.values())
    print(f"{len(a)} results ({errors} errors recorded), {len(found)} differences")
    return 1 if found else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("out")
    rec.add_argument("--only", help="problems whose path contains this")
    cmp = sub.add_parser("compare")
    cmp.add_argument("before")
    cmp.add_argument("after")
    args = parser.parse_args()
    if args.mode == "record":
        record(args.out, args.only)
    else:
        sys.exit(compare(args.before, args.after))


if __name__ == "__main__":
    main()
