"""Write importable modules of the Triton tutorials' kernels (not kept in this repository).

A tutorial is a script: at import it asks the GPU driver for the device and its properties,
then tests and benchmarks its kernel. This keeps what the kernel is: the imports, the
functions decorated with `triton.jit` (or an autotuner over one) and the `torch.autograd.Function`
classes that launch them, as the tutorial wrote them, and drops every other statement.

    python extract.py TRITON/python/tutorials OUT
writes OUT/tutorial_softmax.py (02-fused-softmax.py) and OUT/tutorial_layer_norm.py
(05-layer-norm.py); put OUT on PYTHONPATH for the candidates.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

TUTORIALS = {"02-fused-softmax.py": "tutorial_softmax.py",
             "05-layer-norm.py": "tutorial_layer_norm.py"}


def kernels_of(source: str) -> str:
    tree = ast.parse(source)
    kept = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            kept.append(node)
        elif isinstance(node, ast.FunctionDef) and any(
                "triton" in ast.unparse(d) for d in node.decorator_list):
            kept.append(node)
        elif isinstance(node, ast.ClassDef) and any(
                "autograd.Function" in ast.unparse(b) for b in node.bases):
            kept.append(node)
    return ast.unparse(ast.Module(body=kept, type_ignores=[])) + "\n"


def main(src: str, out: str) -> None:
    Path(out).mkdir(parents=True, exist_ok=True)
    for name, target in TUTORIALS.items():
        text = kernels_of((Path(src) / name).read_text())
        (Path(out) / target).write_text(f'"""{name} of the Triton tutorials: its kernels."""\n'
                                        + text)


if __name__ == "__main__":
    main(*sys.argv[1:3])
