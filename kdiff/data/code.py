"""The code a result depends on, as a digest: a module's source and that of every kdiff
module it imports, followed through the import statements of each (at any depth,
function-local and TYPE_CHECKING imports included: an over-approximation only makes a result
again when it need not). What keys a cached or stored result by it is made again when that
code changes, as a version constant left unbumped would not."""
from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
from pathlib import Path

from kdiff import __version__


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


def package_modules(package: str) -> set[str]:
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


@functools.lru_cache(maxsize=None)
def code_digest(*roots: str) -> str:
    """The digest of the modules `roots` and everything they import (`closure`)."""
    return _digest(closure(*roots))
