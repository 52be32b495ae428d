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
from kdiff.data.files import joined, named_data_files, with_named_siblings


@functools.lru_cache(maxsize=None)
def _origin(name: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin)


def _kdiff_imports(source: bytes, package: str) -> frozenset[str]:
    """The kdiff modules (and packages) an import in `source` names; relative imports are
    resolved against `package`."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
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


# Cached, as `closure` is: the gates' closures share most of their modules, and parsing each
# module once per closure took 10 s of a default run's driver, at its first stored verdict.
@functools.lru_cache(maxsize=None)
def _imports(name: str, path: Path) -> frozenset[str]:
    """The kdiff modules (and packages) that the module `name`'s source at `path` imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    return _kdiff_imports(path.read_bytes(), package)


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


def _parsed_imports(source: bytes) -> frozenset[str]:
    try:
        return _kdiff_imports(source, "")
    except (SyntaxError, ValueError):  # a file that does not parse imports nothing
        return frozenset()


def source_digest(path: Path) -> str:
    """The sha256 of a problem's or a candidate's file, extended by what it runs beside it:
    the files in its folder that it names (kdiff.data.files.with_named_siblings) and the kdiff
    modules any of them imports (their closure: a problem built on a helper in kdiff, as
    kernels/mamba3's are, is another problem once the helper changes). A file that names
    neither has the digest of its bytes alone. OSError or UnreadableFile for an unreadable
    file."""
    files = with_named_siblings(path)
    h = hashlib.sha256(joined(files))
    for data in named_data_files(files):  # read at run time: a changed one is another kernel
        with open(data, "rb") as f:
            h.update(f"\0{data.name}\0{hashlib.file_digest(f, 'sha256').hexdigest()}".encode())
    imported = frozenset().union(*(_parsed_imports(body) for _, body in files))
    if imported:
        h.update(f"\0{_digest(closure(*sorted(imported)))}".encode())
    return h.hexdigest()
