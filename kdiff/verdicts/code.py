"""The code a verdict depends on, as a digest: what the results store keys verdicts by, so
that a fix to one gate re-judges only that gate's results, and a fix to a native check or to
the code every gate shares re-judges everything it touches.

A module's code is its source and that of every kdiff module it imports, followed through the
import statements of each (at any depth, function-local and TYPE_CHECKING imports included:
an over-approximation is only a needless re-judging), together with the packages it starts
or loads by name rather than imports: the sandbox (the worker runs every call in a process of
its own) and, for the case itself, the bench's adapter (found through its plugin entry)."""
from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
from pathlib import Path

from kdiff import __version__

# Packages loaded by name, not imported: the worker's process runs `kdiff.sandbox` modules.
LOADED_BY_NAME = ("kdiff.sandbox",)
# The case's own judgement (discovery, the native check, the judging loop): the driver.
CASE_ROOT = "kdiff.verdicts.judge"


@functools.lru_cache(maxsize=None)
def _origin(name: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin)


# Cached, as `closure` is: the gates' closures share most of their modules, and parsing each
# module once per closure took 10 s of a default run's driver, at its first stored verdict.
@functools.lru_cache(maxsize=None)
def _imports(name: str, path: Path) -> frozenset[str]:
    """The kdiff modules (and packages) that the source at `path` names in an import."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_bytes())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return frozenset(m for m in found if m == "kdiff" or m.startswith("kdiff."))


def _package_modules(package: str) -> set[str]:
    origin = _origin(package)
    if origin is None:
        return set()
    return {package} | {f"{package}.{p.stem}" for p in origin.parent.glob("*.py")
                        if p.name != "__init__.py"}


@functools.lru_cache(maxsize=None)
def closure(*roots: str) -> tuple[tuple[str, Path], ...]:
    """(module, file) for `roots`, the packages above them and everything they import."""
    seen: dict[str, Path] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = _origin(name)
        if path is None:
            continue  # a name imported from a module, not a module
        seen[name] = path
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
        todo += sorted(_imports(name, path))
    return tuple(sorted(seen.items()))


def _digest(modules: tuple[tuple[str, Path], ...]) -> str:
    h = hashlib.sha256()
    for name, path in modules:
        h.update(f"{name}\0".encode() + path.read_bytes() + b"\0")
    return f"{__version__}+{h.hexdigest()[:16]}"


def _with_loaded(*roots: str) -> tuple[str, ...]:
    return tuple(sorted({*roots, *(m for p in LOADED_BY_NAME for m in _package_modules(p))}))


@functools.lru_cache(maxsize=None)
def gate_code(gate_id: str) -> str:
    """The digest of the code one gate's result depends on."""
    from kdiff.gates.registry import entry
    return _digest(closure(*_with_loaded(f"kdiff.gates.{entry(gate_id).module}")))


@functools.lru_cache(maxsize=None)
def case_code(bench: str) -> str:
    """The digest of the code a case's verdict besides its gates depends on: the judging loop,
    the sandbox and the bench's adapter (kdiff's own adapters; a third-party adapter's code
    is not kdiff's to hash)."""
    return _digest(closure(*_with_loaded(CASE_ROOT, *sorted(_package_modules(
        f"kdiff.adapters.{bench}")))))
