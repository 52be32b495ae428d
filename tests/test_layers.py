"""The package layers: data flows one way (adapter -> cases -> native check and gates ->
verdicts -> differential -> reports), so a module imports only from its own layer or the
layers below it, and no modules import each other in a circle, function-local imports
included (a local import hides a cycle; it does not break it)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The source folder of each installed package (pyproject's package-dir).
SOURCES = {"kdiff": "kdiff", "kdiff.gates": "gates", "kdiff.adapters": "adapters",
           "kdiff.differential": "differential", "kdiff.reports": "reports",
           "kdiff.kernels": "kernels"}
# Lowest first. Packages of one rank do not import each other (gates and adapters are
# judged side by side; kernels are candidates and know nothing of the judge).
LAYERS = [
    {"kdiff.data"},
    {"kdiff.sandbox"},
    {"kdiff.numerics"},
    {"kdiff.judging"},
    {"kdiff.gates", "kdiff.adapters", "kdiff.kernels"},
    {"kdiff.verdicts"},
    {"kdiff.differential"},
    {"kdiff.reports"},
    {"kdiff.tune"},
    {"kdiff.commands"},
    {"kdiff.__main__"},
]
# What a layer may not use although it lies below: the differential engine counts verdicts,
# so it reads records only, never the gates that made them; above the adapters, an adapter is
# reached only through the plugin hooks, so that an installed third-party adapter serves
# wherever a shipped one does.
ABOVE_ADAPTERS = ("kdiff.verdicts", "kdiff.differential", "kdiff.reports", "kdiff.tune",
                  "kdiff.commands")
FORBIDDEN = {package: {"kdiff.adapters"} for package in ABOVE_ADAPTERS}
FORBIDDEN["kdiff.differential"].add("kdiff.gates")


def module_files() -> dict[str, Path]:
    found = {}
    for package, folder in SOURCES.items():
        for path in (ROOT / folder).rglob("*.py"):
            rel = path.relative_to(ROOT / folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            # The shipped corpus (problem files, candidate runs) is data, not the package.
            if package == "kdiff.kernels" and parts and parts[0] in ("KernelBench", "runs"):
                continue
            found[".".join([package, *parts])] = path
    return found


MODULES = module_files()


def imports(name: str, path: Path) -> set[str]:
    """The kdiff modules `name` imports anywhere in its body, resolved to known modules."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            targets = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != name and target.startswith("kdiff."):
                out.add(target)
    return out


GRAPH = {name: imports(name, path) for name, path in MODULES.items()}


def layer_of(module: str) -> tuple[int, str] | None:
    for rank, packages in enumerate(LAYERS):
        for package in packages:
            if module == package or module.startswith(package + "."):
                return rank, package
    return None


def test_every_module_has_a_layer():
    assert [m for m in MODULES if m not in ("kdiff", "kdiff.__main__") and layer_of(m) is None] == []


@pytest.mark.parametrize("name", sorted(m for m in MODULES if layer_of(m)))
def test_imports_follow_the_layers(name):
    rank, package = layer_of(name)
    against = []
    for target in sorted(GRAPH[name]):
        other = layer_of(target)
        if other is None:
            continue
        if other[0] > rank or (other[0] == rank and other[1] != package):
            against.append(f"{target} (layer {other[1]})")
        elif other[1] in FORBIDDEN.get(package, ()):
            against.append(f"{target} (forbidden to {package})")
    assert against == [], f"{name} (layer {package}) imports against the flow: {against}"


def test_no_import_cycles():
    cycles = []
    state: dict[str, int] = {}  # 1 on the stack, 2 done

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(GRAPH.get(node, ())):
            if state.get(nxt) == 1:
                cycles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for module in sorted(GRAPH):
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_the_check_sees_a_cycle_and_a_violation(tmp_path):
    """The walk above must find what it looks for: a local import against the flow."""
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from kdiff.commands.cli import main\n")
    assert "kdiff.commands.cli" in imports("kdiff.data.bad", bad)
