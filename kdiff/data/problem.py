"""Loading KernelBench-format files: a problem (`Model`, `get_inputs`, `get_init_inputs`) or a
candidate (`ModelNew`).

Each load executes the file as a fresh module with a unique name, so two problems with the
same file name never share state, and a problem's module-level size constants can be
changed (shape polymorphism) without touching anyone else's copy.
"""
from __future__ import annotations

import ast
import importlib.util
import itertools
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

_counter = itertools.count()


class LoadError(Exception):
    """A file that cannot be used: the message is one line naming the file and the cause."""


LOADED_PREFIX = "loaded_"  # the module names of files loaded by path


def load_module(path: Path | str, role: str) -> types.ModuleType:
    path = Path(path)
    if not path.is_file():
        raise LoadError(f"{path}: {role} file not found")
    # A name that does not say kdiff: the candidate reads its own __name__.
    name = f"{LOADED_PREFIX}{role}_{path.stem.replace('-', '_')}_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, str(path))
    if spec is None or spec.loader is None:
        raise LoadError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    # Registered before execution: Triton's JIT and dataclasses look modules up by name.
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        sys.modules.pop(name, None)
        raise LoadError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from None
    except BaseException as exc:  # noqa: BLE001 - any failure of foreign code is reported
        sys.modules.pop(name, None)
        raise LoadError(f"{path}: {role} does not import: {type(exc).__name__}: "
                        f"{_one_line(exc)}") from None
    return module


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else ""


# What a module-level value computed from the sizes may be made of (`input_shape =
# (num_classes,)`, `out_features = in_features * 2`): arithmetic on names and literals and a
# few pure builtins. Anything else (a drawn tensor, a call into torch) is not recomputed.
_PURE_NODES = (ast.Tuple, ast.List, ast.Name, ast.Constant, ast.BinOp, ast.UnaryOp,
               ast.operator, ast.unaryop, ast.Load, ast.Subscript, ast.Slice, ast.Call,
               ast.IfExp, ast.Compare, ast.cmpop, ast.BoolOp, ast.boolop)
_PURE_CALLS = frozenset({"int", "min", "max", "len", "tuple", "abs", "round"})


@dataclass(frozen=True)
class Derivation:
    """A module-level assignment computed from other module-level names."""

    targets: frozenset[str]
    reads: frozenset[str]
    code: types.CodeType


def _derivations(path: Path) -> list[Derivation]:
    try:
        tree = ast.parse(path.read_text(), str(path))
    except (OSError, SyntaxError, ValueError):
        return []
    assigned: set[str] = set()
    found = []
    for stmt in tree.body:
        if not isinstance(stmt, ast.Assign):
            continue
        targets = set()
        for t in stmt.targets:
            names = t.elts if isinstance(t, ast.Tuple) else [t]
            targets.update(n.id for n in names if isinstance(n, ast.Name))
        reads = {n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name)}
        pure = all(isinstance(n, _PURE_NODES) for n in ast.walk(stmt.value)) and all(
            isinstance(n.func, ast.Name) and n.func.id in _PURE_CALLS
            for n in ast.walk(stmt.value) if isinstance(n, ast.Call))
        if pure and targets and reads & assigned:
            code = compile(ast.Module([stmt], type_ignores=[]), str(path), "exec")
            found.append(Derivation(frozenset(targets), frozenset(reads - _PURE_CALLS), code))
        assigned |= targets
    return found


@dataclass
class ProblemModule:
    """A loaded reference problem. Sizes live in module globals that `get_inputs()` reads."""

    path: Path
    module: types.ModuleType
    _derived: list[Derivation] | None = field(default=None, repr=False, compare=False)

    def derivations(self) -> list[Derivation]:
        """Module-level values the problem computes from its sizes, in source order."""
        if self._derived is None:
            self._derived = _derivations(self.path)
        return self._derived

    def derived_constants(self) -> set[str]:
        return {n for d in self.derivations() for n in d.targets}

    @property
    def Model(self) -> type:
        return self.module.Model

    def get_inputs(self) -> list[Any]:
        return list(self.module.get_inputs())

    def get_init_inputs(self) -> list[Any]:
        fn: Callable[[], Any] | None = getattr(self.module, "get_init_inputs", None)
        return list(fn()) if fn is not None else []

    def declared(self, name: str, default: Any = None) -> Any:
        """A problem may declare kdiff-specific facts as module constants (KDIFF_*)."""
        return getattr(self.module, name, default)

    def set_sizes(self, sizes: dict[str, int]) -> None:
        """Set module-level constants (get_inputs() and get_init_inputs() read them), and
        compute again the module-level values derived from those that changed (`input_shape
        = (num_classes,)`): a size and what the problem computed from it stay consistent."""
        changed = {_base(n) for n, v in sizes.items() if self._get(n) != v}
        for name, value in sizes.items():
            self._set(name, value)
        for d in self.derivations():
            if d.reads & changed:
                exec(d.code, self.module.__dict__)
                changed |= d.targets

    def _get(self, name: str) -> Any:
        base, index = _element(name)
        value = getattr(self.module, base, None)
        return value if index is None else value[index]

    def _set(self, name: str, value: Any) -> None:
        """`name` or `name[i]`, an element of a tuple of sizes (`input_shape = (4096,)`)."""
        base, index = _element(name)
        if index is not None:
            items = list(getattr(self.module, base))
            items[index] = value
            value = tuple(items)
        setattr(self.module, base, value)

    def variants(self) -> dict[str, dict[str, int]]:
        """Other configurations the benchmark itself judges, each named, as settings of module
        constants (KDIFF_VARIANTS; TritonBench: the gold test's other calls). A constant a
        variant sets selects a configuration; it is not a size."""
        return dict(self.declared("KDIFF_VARIANTS", {}))

    def selectors(self) -> list[str]:
        """The constants the variants set."""
        return sorted({n for setting in self.variants().values() for n in setting})

    def constants(self) -> dict[str, int]:
        """Every module constant a gate may set, at its current value: the sizes and the
        constants the variants set. What restores the problem after a gate changed some."""
        return {**self.size_constants(), **{n: getattr(self.module, n) for n in self.selectors()}}

    def size_constants(self) -> dict[str, int]:
        """Module-level integer constants read by get_inputs()/get_init_inputs(): the
        problem's free dimensions (and some fixed hyper-parameters; the reference tells
        them apart by refusing shapes outside its class). Variant selectors are not sizes."""
        names: set[str] = set()
        for fn_name in ("get_inputs", "get_init_inputs"):
            fn = getattr(self.module, fn_name, None)
            if fn is not None and hasattr(fn, "__code__"):
                names.update(fn.__code__.co_names)
        names -= set(self.selectors()) | self.derived_constants()
        out = {}
        for n in sorted(names):
            v = getattr(self.module, n, None)
            if _is_size(v):
                out[n] = v
            elif isinstance(v, tuple) and v and all(_is_size(e) for e in v):
                # a shape written as a tuple (`input_shape = (32768,)`): each element a size
                out.update({f"{n}[{i}]": e for i, e in enumerate(v)})
        return out


def _is_size(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _element(name: str) -> tuple[str, int | None]:
    """'input_shape[0]' -> ('input_shape', 0); 'dim' -> ('dim', None)."""
    if name.endswith("]") and "[" in name:
        base, index = name[:-1].split("[", 1)
        return base, int(index)
    return name, None


def _base(name: str) -> str:
    return _element(name)[0]


def load_problem(path: Path | str) -> ProblemModule:
    module = load_module(path, "problem")
    for attr in ("Model", "get_inputs"):
        if not hasattr(module, attr):
            raise LoadError(f"{path}: problem defines no `{attr}`")
    return ProblemModule(Path(path), module)


def load_candidate_class(path: Path | str, entry_points: tuple[str, ...] = ("ModelNew",)) -> type:
    module = load_module(path, "candidate")
    for name in entry_points:
        cls = getattr(module, name, None)
        if cls is not None:
            return cls
    raise LoadError(f"{path}: candidate defines no `{'` or `'.join(entry_points)}`")
