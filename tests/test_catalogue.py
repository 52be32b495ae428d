"""The declarative gate catalogue (gates/registry.py) against the gates themselves: each
class agrees with its entry, every signature the gates and the sandbox can emit is
catalogued with a meaning (and none is stale), and docs/signatures.md is its rendering."""
from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

from kdiff.gates import registry
from kdiff.reports import glossary

ROOT = Path(__file__).parent.parent
# Where signatures are made: the gates, the shared gate base, the sandbox's failures, and
# the judge's check of the worker's replies.
SOURCES = sorted(p for p in (ROOT / "gates").glob("*.py") if p.name != "registry.py") + [
    ROOT / "kdiff" / "judging" / "context.py", ROOT / "kdiff" / "sandbox" / "process.py",
    ROOT / "kdiff" / "sandbox" / "replies.py"]
SNAKE = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)+")
# snake_case strings of the gates that are not signatures: torch op and module names, worker
# options, trial names, compile targets, keys of the compiler child's outcomes. A new one must be classified here or catalogued as
# a signature.
NOT_SIGNATURES = frozenset({
    "as_strided", "churn_seed", "constant_pad_nd", "cpp_extension", "empty_like", "fresh_parameters",
    "full_like", "index_select", "inputs_after", "lift_fresh", "load_inline", "masked_select",
    "max_pool1d", "max_pool2d_with_indices", "max_pool3d_with_indices", "new_empty",
    "new_empty_strided", "new_full", "new_ones", "new_zeros", "ones_like", "over_budget",
    "overwrite_stored",
    "pixel_shuffle", "rand_like", "randint_like", "randn_like", "return_inputs", "sm_100",
    "sm_80", "sm_90", "split_with_sizes", "store_inputs_as", "stored_again",
    "upsample_nearest2d", "use_stored_inputs", "zeros_like"})


def _strings(node: ast.AST) -> set[str]:
    return {n.value for n in ast.walk(node) if isinstance(n, ast.Constant)
            and isinstance(n.value, str)}


def _signature_parameters(trees: list[ast.Module]) -> dict[str, int]:
    """Callable name -> the position of its `signature` parameter (self not counted), from
    the functions and dataclass fields of the sources."""
    where = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                names = [a.arg for a in node.args.args]
                if names and names[0] in ("self", "cls"):
                    names = names[1:]
                if "signature" in names:
                    where[node.name] = names.index("signature")
            elif isinstance(node, ast.ClassDef):
                fields = [s.target.id for s in node.body if isinstance(s, ast.AnnAssign)
                          and isinstance(s.target, ast.Name)]
                if "signature" in fields and not any(isinstance(s, ast.FunctionDef)
                                                     and s.name == "__init__" for s in node.body):
                    where[node.name] = fields.index("signature")
    return where


def _name(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


@functools.lru_cache(maxsize=1)
def emitted_signatures() -> dict[str, str]:
    """Every string that can become a signature, with the file it is made in: assigned to a
    `signature`, passed as one (by keyword or position), or a snake_case string that is not
    listed as something else, in a gate (dictionary keys and returned tuples that become
    signatures)."""
    trees = {p: ast.parse(p.read_text()) for p in SOURCES}
    positions = _signature_parameters(list(trees.values()))
    found: dict[str, str] = {}
    for path, tree in trees.items():
        docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                      if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef))
                      and ast.get_docstring(n)}
        for node in ast.walk(tree):
            made: set[str] = set()
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if node.value is not None and any(
                        getattr(t, "id", getattr(t, "attr", None)) == "signature"
                        for t in targets):
                    made = _strings(node.value)
            elif isinstance(node, ast.Call):
                for kw in node.keywords:
                    if kw.arg == "signature":
                        made |= _strings(kw.value)
                at = positions.get(_name(node.func))
                if at is not None and at < len(node.args):
                    made |= _strings(node.args[at])
            elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
                  and path.parent.name == "gates" and id(node) not in docstrings
                  and SNAKE.fullmatch(node.value) and node.value not in NOT_SIGNATURES):
                made = {node.value}
            for sig in made:
                found.setdefault(sig, path.relative_to(ROOT).as_posix())
    return found


def test_every_emitted_signature_is_catalogued_and_none_is_stale():
    emitted = emitted_signatures()
    missing = {s: where for s, where in emitted.items() if s not in registry.SIGNATURES}
    assert not missing, f"signatures without a catalogue entry (gates/registry.py): {missing}"
    stale = set(registry.SIGNATURES) - set(emitted)
    assert not stale, f"catalogued signatures nothing emits: {stale}"
    assert all(s.meaning and s.gates for s in registry.SIGNATURES.values())


def test_the_scan_finds_signatures_in_each_shape_they_are_made():
    """The scan itself: one of each way a signature is written in the sources."""
    emitted = emitted_signatures()
    for sig in ("hang",  # a class attribute (sandbox)
                "overflow",  # a conditional assignment (PRC-03)
                "output_aliasing",  # positional, Gate.result
                "shared_over_budget",  # positional, a dataclass (RES-02's Violation)
                "subnormal_flushed",  # positional, EXC-02's own fail()
                "nan_swallowed",  # a dictionary key (EXC-01)
                "stateful_cache",  # a returned tuple (CMP-02)
                "unusable_output"):  # the judge's reply check
        assert sig in emitted, sig


@pytest.mark.parametrize("entry", registry.GATES, ids=lambda e: e.id)
def test_each_gate_class_agrees_with_its_catalogue_entry(entry):
    gate = registry._load(entry.module)
    assert (gate.id, gate.name, gate.klass, gate.summary) == (
        entry.id, entry.name, entry.klass, entry.summary)


def test_docs_signatures_is_the_catalogue_rendered():
    assert (ROOT / "docs" / "signatures.md").read_text() == glossary.render(), (
        "regenerate: python -m kdiff.reports.glossary > docs/signatures.md")
