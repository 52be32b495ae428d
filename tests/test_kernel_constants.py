"""Float constants in kdiff's own Triton kernels (kernels/gdn, kernels/mamba3), read from the
source: what the interpreter on the CPU keeps and the compiler does not, found without a GPU.

Compiled (Triton 3.6, sm_90, checked in the PTX), a float handed to a builtin as an argument
(tl.fma, tl.where, tl.full, ...) is made an fp32 constant first: tl.fma(-k, TWO_PI, x) in fp64
used 6.2831854820251465, and the H200 found every reduction off. A -0.0 literal comes out as
+0.0 wherever it stands. Operators keep a float's fp64 value (x * INV_TWO_PI multiplies by the
fp64 constant), so only builtins' arguments and -0.0 are checked.
"""
from __future__ import annotations

import ast
import importlib
import importlib.util
import math
import struct
from pathlib import Path

import pytest
import triton.language as tl

ROOT = Path(__file__).resolve().parent.parent / "kernels"
MODULES = sorted(p for folder in ("gdn", "mamba3") for p in (ROOT / folder).glob("*.py"))


def _fp32_exact(value: float) -> bool:
    return math.isnan(value) or struct.unpack("f", struct.pack("f", value))[0] == value


def _is_jit(fn: ast.FunctionDef) -> bool:
    return any("jit" in ast.unparse(d) for d in fn.decorator_list)


def _float_of(node: ast.AST, module) -> float | None:
    """The float a node stands for: a literal, a negated literal, or a module global holding
    a float or a tl.constexpr of one."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _float_of(node.operand, module)
        return None if inner is None else -inner
    if isinstance(node, ast.Constant) and isinstance(node.value, float):
        return node.value
    if isinstance(node, ast.Name):
        value = getattr(module, node.id, None)
        value = value.value if isinstance(value, tl.constexpr) else value
        return value if isinstance(value, float) else None
    return None


def findings(path: Path, module) -> list[str]:
    """'file:line: what' for every float a builtin would round to fp32, and every -0.0, in the
    jit functions of `path`, whose globals are `module`'s."""
    found = []
    for fn in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(fn, ast.FunctionDef) and _is_jit(fn)):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
                value = _float_of(node, module)
                if value == 0.0 and math.copysign(1.0, value) < 0:
                    found.append(f"{path.name}:{node.lineno}: -0.0 (compiles to +0.0)")
            if isinstance(node, ast.Call) and ast.unparse(node.func).startswith("tl."):
                for arg in [*node.args, *(k.value for k in node.keywords)]:
                    value = _float_of(arg, module)
                    if value is not None and not _fp32_exact(value):
                        found.append(f"{path.name}:{arg.lineno}: {ast.unparse(arg)} = {value!r}"
                                     f" to {ast.unparse(node.func)} (rounded to fp32)")
    return found


@pytest.mark.parametrize("path", MODULES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_kernel_hands_a_builtin_a_float_fp32_would_round_nor_writes_minus_zero(path):
    name = "kdiff.kernels." + ".".join(path.relative_to(ROOT).with_suffix("").parts)
    assert findings(path, importlib.import_module(name)) == []


def test_the_check_finds_both_mistakes(tmp_path):
    """The check itself: tl.fma(-k, TWO_PI, x) and tl.where(c, -0.0, x) are caught; an
    fp32-exact constant (0.5) and an operator's fp64 one (x * TWO_PI) are not."""
    path = tmp_path / "bad_constants.py"
    path.write_text(
        "import triton\nimport triton.language as tl\nTWO_PI = tl.constexpr(6.283185307179586)\n"
        "@triton.jit\ndef f(k, x, c):\n    y = x * TWO_PI + tl.fma(k, 0.5, x)\n"
        "    z = tl.fma(-k, TWO_PI, y)\n    return tl.where(c, -0.0, z)\n")
    spec = importlib.util.spec_from_file_location("bad_constants", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found = findings(path, module)
    assert [f.split(": ", 1)[1].split(" ")[0] for f in found] == ["TWO_PI", "-0.0"], found
