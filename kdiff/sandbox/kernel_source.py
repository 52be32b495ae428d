"""Triton kernels read from their source by the judge, without running the module they are in.

RES-02 compiles a candidate's kernels for other targets. A compile needs the kernel as a
JITFunction, and importing the candidate's module to get one runs the candidate's code,
whose word on its own compile results the judge cannot take. So the judge reads the kernel's
file itself and writes a module of what its kernels need and nothing that runs: imports of
Triton, math and inductor's `triton_helpers`, constants, and the functions decorated with
`triton.jit` (other decorators dropped: an autotuner's or a heuristic's choices are in the
recorded launch; so are the jit decorator's naming and profiling hooks, NAMING_KEYWORDS). A
kernel body is compiled, not run, but Triton's front end calls the
Python functions a body names, with constant arguments; so a body may name only its own
variables, the module's kernels and constants, Triton's builtins, the functions of `triton`
that Triton runs at compile time (`triton.next_power_of_2`, `triton.cdiv`), and paths inside
`ALLOWED_MODULES` (resolved here, every module on the way checked, none ending at a module:
a module held in a variable would reach what was never resolved; a name absent from such a
module reaches nothing, and Triton's front end raises where a taken branch evaluates it), and
no attribute that starts with an underscore but Triton's language's own compile-time helpers
and device functions (`triton.language.standard._log2`). What a chain rooted at a variable reaches is not
resolved (variables hold Triton values, or the non-module objects those paths give). A file that
needs more is not extractable: its kernels are compiled by importing it, and that compile is
its own word.

A jit function imported from another file of the kernel's package (`from .dropout_kernels
import apply_dropout` in attorch; `from fla.ops.utils import ...` inside fla) is read the same
way: the file is found by path, never imported (a relative import from the kernel's folder, an
absolute one whose first part is a package folder above the kernel's file, or else a package
installed on the path: based's kernels take flash-attention's activations), the judge's
module of it is built and checked as the kernel's own is, and its top-level names are prefixed
(`kdiff_dep1_`) so that two files' names never meet; the imported name is bound to the prefixed
kernel. A star import of such a file (`from .utils import *`, gemlite's) binds each name it
exports the same way, and a module-level `name = kernel` (gemlite's `swizzle_tile =
swizzle_tile_v1`) is another name for that kernel, in the kernel's file or a followed one.
At most MAX_FOLLOWED files are followed. A name imported from anywhere else stays
unresolved, and a kernel that names it is not extractable.

A kernel is refused alone: a jit function the judge cannot build (it names what is not
checked), and every kernel that calls one, is left out of the module with its reason
(`ExtractedModule.refused`), and the file's other kernels are built as before; a file none of
whose kernels can be built is not extractable. A followed file is built the same way, so a
library's file of helpers (fla's `fla/ops/utils/op.py`) lends the helpers that can be built
whatever else it defines.

A name that an `if` or a `try` at module level binds by importing (a switch between Triton
versions: `try: from triton.language.extra.libdevice import rsqrt` / `except ImportError:
from triton.language.math import rsqrt`) is taken from the first of its imports that resolves
inside `ALLOWED_MODULES` here. Which branch the candidate's process took is its own word; every
alternative the judge takes is Triton's or math's, under the same kernel body. Jit functions and
constants an `if` or a `try` defines (fla's `exp`, fast or not by an environment variable the
candidate's process reads) differ from branch to branch: the judge builds every combination of
branches (`extract`), and RES-02 compiles a kernel each way that changes what it reaches. A
module-level definition that chooses by a conditional expression (`X = tl.constexpr(a if C else
b)`, a jit decorator's `do_not_specialize=a if C else b`) is the switch it amounts to.

Parameter annotations that are not Triton's (`x: torch.Tensor`, `n: int`, common in written
kernels) matter to Triton only through the name it reads from them (a class's `__name__`):
such an annotation naming a class of Python's builtins or of torch (never rebound in the file)
is written as that name, a string, which Triton reads the same way; under `from __future__
import annotations` no annotation is evaluated (each is the string of its source), and every
one is kept as written. An annotation that builds one of Triton's types from constants
(`tl.pointer_type(tl.int64)`) is Triton's own, kept as written.
"""
from __future__ import annotations

import ast
import copy
import dataclasses
import importlib
import importlib.machinery
import importlib.util
import itertools
import types
from dataclasses import dataclass
from pathlib import Path

# What a kernel body may reach: Triton's language, math, and the helpers inductor's generated
# kernels call (torch.compile's Triton kernels: `triton_helpers.maximum`, and Triton's
# libdevice and math through it), library code installed with torch as Triton's is.
INDUCTOR_HELPERS = "torch._inductor.runtime.triton_helpers"
ALLOWED_MODULES = ("triton.language", "math", INDUCTOR_HELPERS)
IMPORTABLE = ("triton", "math", "__future__")  # top-level packages a kept import may name
JIT_DECORATORS = ("triton.jit", "triton.runtime.jit.jit", "triton.runtime.jit")
# Triton's builtin namespace (code_generator.CodeGenerator.builtin_namespace) less getattr and
# hasattr, which would reach any attribute by a constant string.
BUILTINS = frozenset({"len", "list", "range", "float", "int", "isinstance", "print", "min",
                      "max"})
# Keywords of `triton.jit` that name a kernel and describe its launches to profilers
# (`repr=`, a function of its specialization giving the compiled kernel's name;
# `launch_metadata=`, a hook called at each launch), nothing a compile's resources depend on:
# the judge's module drops them, whatever function the file gives them (aiter's and
# triton_kernels' kernels name themselves so).
NAMING_KEYWORDS = ("repr", "launch_metadata")
MAX_FOLLOWED = 16  # files of the kernel's package one extraction may take jit functions from
# Combinations of module-level branches one file's kernels are built in (`extract`), over the
# switches its kernels reach: fla's op.py has four of two branches each, and a kernel file of
# fla's one more.
MAX_VARIANTS = 64
DEPENDENCY_PREFIX = "kdiff_dep"  # kdiff_dep{n}_{name}: a followed file's top-level names
# Libraries whose classes may annotate a kernel's parameters (the annotation_name docstring).
ANNOTATION_LIBRARIES = ("builtins", "torch")


class NotExtractable(ValueError):
    """The file's kernels need more than the judge builds (one line: why)."""


@dataclass(frozen=True)
class ExtractedModule:
    text: str  # the module's source, as the judge wrote it
    kernels: frozenset[str]  # the names of the kernels it defines
    followed: tuple[str, ...] = ()  # the other files its kernels' jit functions came from
    refused: tuple[tuple[str, str], ...] = ()  # (kernel, why) left out of the module
    # the other branches of module-level switches that define jit functions: (text, kernels)
    # of each further combination (the module docstring)
    alternatives: tuple[tuple[str, frozenset[str]], ...] = ()

    def variants(self) -> list[tuple[str, frozenset[str]]]:
        """(text, kernels) of every combination of branches, this one first."""
        return [(self.text, self.kernels), *self.alternatives]

    def ways(self) -> list[tuple[str, frozenset[str]]]:
        """(text, kernels) of the combinations each kernel differs in: a kernel is listed in
        the first combination that builds it, and in each later one where something it
        reaches is defined otherwise (a kernel that calls `exp` alone is built two ways, not
        once for every combination of a file's switches)."""
        seen: dict[str, set[frozenset[str]]] = {}
        ways = []
        for text, kernels in self.variants():
            reached = _reached(ast.parse(text), kernels)
            kept = frozenset(k for k in kernels if reached[k] not in seen.setdefault(k, set()))
            for k in kept:
                seen[k].add(reached[k])
            if kept:
                ways.append((text, kept))
        return ways


def _dotted(node: ast.expr) -> tuple[str, list[str]] | None:
    """`a.b.c` as ("a", ["b", "c"]); None for anything but a name and attributes."""
    attrs = []
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    return (node.id, attrs[::-1]) if isinstance(node, ast.Name) else None


def exists_here(module: str) -> bool:
    """Whether `module` (of Triton, math or `__future__`) is in this Python. A kernel file's
    import from a module another Triton had (based's `from triton.ops.matmul_perf_model import
    early_config_prune`: Triton 3 dropped `triton.ops`) binds nothing in the judge's module,
    whose compiler child would not import otherwise; a body naming what it binds reaches
    nothing, as a name absent from Triton's modules does (`_resolve`)."""
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:  # a parent package absent too
        return False


def _resolve(path: str) -> object:
    """The object at dotted `path` inside an allowed module; NotExtractable on the way out of
    one (a module elsewhere, an underscore name)."""
    parts = path.split(".")
    root = next((m for m in ALLOWED_MODULES if path == m or path.startswith(m + ".")), None)
    if root is None:
        helper = _triton_constexpr_function(path)
        if helper is not None:
            return helper
        raise NotExtractable(f"{path}: outside {' and '.join(ALLOWED_MODULES)}")
    rest = parts[len(root.split(".")):]
    private = any(p.startswith("_") for p in rest)
    if private and not _triton_language_helper(root, rest):
        raise NotExtractable(f"{path}: a private name")
    try:
        obj: object = importlib.import_module(root)
    except ImportError:  # a torch without inductor
        raise NotExtractable(f"{path}: {root} cannot be imported here") from None
    for part in rest:
        try:
            obj = getattr(obj, part)
        except AttributeError:
            if not isinstance(obj, types.ModuleType):
                raise NotExtractable(f"{path}: no such name") from None
            try:  # a submodule not imported yet (triton.language.extra.libdevice)
                obj = importlib.import_module(f"{obj.__name__}.{part}")
            except ImportError:
                # Absent from the module: a name Triton's language binds only once a backend
                # is chosen (libdevice's functions), or one of another Triton's
                # (`tl.libdevice`, Triton 2's), often in a constexpr branch a launch does not
                # take. Nothing is reached through it, and the compiler child, which holds
                # the same modules, raises where a taken branch evaluates it, as the
                # candidate's own module would.
                return None
        if isinstance(obj, types.ModuleType) and not any(
                obj.__name__ == m or obj.__name__.startswith(m + ".") for m in ALLOWED_MODULES):
            raise NotExtractable(f"{path}: reaches module {obj.__name__}")
    return obj


def _triton_language_helper(root: str, rest: list[str]) -> bool:
    """`triton.language.<module>._name` where that name is one of Triton's own compile-time
    helpers (a ConstexprFunction: `triton.language.standard._log2`, which the bitonic sorts
    copied from Triton's standard library into lmdeploy and TransformerEngine import) or
    device functions (a JITFunction). Other private names stay outside: a module's state
    and Triton's semantic layer (`core._semantic`) are no part of a kernel's language."""
    if root != "triton.language" or not rest or rest[-1].startswith("__") \
            or any(p.startswith("_") for p in rest[:-1]):
        return False
    jit = importlib.import_module("triton.runtime.jit")
    kinds = tuple(k for k in (getattr(jit, "ConstexprFunction", None), jit.JITFunction) if k)
    try:
        obj = importlib.import_module(".".join([root, *rest[:-1]]))
    except ImportError:
        return False
    return isinstance(getattr(obj, rest[-1], None), kinds)


def _triton_constexpr_function(path: str) -> object | None:
    """`triton.<name>` where Triton marks that function to run at compile time on constants
    (a ConstexprFunction: `triton.next_power_of_2`, `triton.cdiv`; flash-attention's rotary
    kernel sizes its block by `triton.next_power_of_2(ROTARY_DIM)`); None for anything else.
    Triton's own pure integer helpers, as `tl`'s builtins are; the package's other names
    (its runtime, its driver) stay outside."""
    parts = path.split(".")
    if len(parts) != 2 or parts[0] != "triton" or parts[1].startswith("_"):
        return None
    kind = getattr(importlib.import_module("triton.runtime.jit"), "ConstexprFunction", None)
    helper = getattr(importlib.import_module("triton"), parts[1], None)
    return helper if kind is not None and isinstance(helper, kind) else None


def module_file(filename: str, module: str | None, level: int) -> Path | None:
    """The `.py` file that `from {'.' * level}{module} import ...` in `filename` names, found by
    path and nothing imported: relative to the kernel's folder, or (level 0) under the nearest
    package folder above it whose name is the module's first part; None if there is none."""
    here = Path(filename).resolve().parent
    parts = module.split(".") if module else []
    if level:
        base = here
        for _ in range(level - 1):
            base = base.parent
    else:
        base = next((d.parent for d in [here, *here.parents] if parts and d.name == parts[0]
                     and (d / "__init__.py").is_file()), None) or installed_package_root(parts)
        if base is None:
            return None
    if not parts:
        return None  # `from . import x`: a module, not a function
    target = base.joinpath(*parts)
    for candidate in (target.with_name(target.name + ".py"), target / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def installed_package_root(parts: list[str]) -> Path | None:
    """The folder on the judge's `sys.path` holding package `parts[0]` (a folder with an
    `__init__.py`, located by path as the import system would, nothing imported), for a
    kernel that takes jit functions from another installed package (based's linear layers
    import flash-attention's activations); None where there is none."""
    if not parts:
        return None
    spec = importlib.machinery.PathFinder.find_spec(parts[0])
    origin = Path(spec.origin) if spec is not None and spec.origin else None
    return origin.parent.parent if origin is not None and origin.name == "__init__.py" else None


def package_folder(filename: str, module: str | None, level: int) -> Path | None:
    """The folder of the package `from {'.' * level}{module} import ...` in `filename` names,
    whose `.py` files such an import binds as modules (FlagGems' `from flag_gems.utils import
    triton_lang_extension as tle`), found by path as module_file finds a package; None where
    it names a module file."""
    if module:
        package = module_file(filename, module, level)
        return package.parent if package is not None and package.name == "__init__.py" \
            else None
    if not level:
        return None
    folder = Path(filename).resolve().parent
    for _ in range(level - 1):
        folder = folder.parent
    return folder


class _Followed:
    """The files one extraction follows (module docstring): each built once, in order; and the
    branches it takes."""

    def __init__(self, choice: dict[tuple[str, int], int] | None = None) -> None:
        self.modules: dict[Path, tuple[str, list[ast.stmt], frozenset[str]] | str] = {}
        self.order: list[Path] = []
        self.refused: dict[tuple[Path, str], str] = {}  # a followed file's kernel left out: why
        # The module-level switches with definitions met in any file of this extraction,
        # (file, line) -> how many branches, and the branch this extraction takes in each
        # (the first where `choice` names none).
        self.switches: dict[tuple[str, int], int] = {}
        self.defines: dict[tuple[str, int], set[str]] = {}  # the names each switch binds
        self.define_kernels: set[tuple[str, int]] = set()  # the switches defining a kernel
        self.choice = choice or {}

    def prefix(self, filename: str) -> str | None:
        """What the judge's module puts before the top-level names of followed file
        `filename`; None for a file not built."""
        built = self.modules.get(Path(filename))
        return built[0] if isinstance(built, tuple) else None

    def kernel(self, path: Path, name: str, read) -> str:
        """The prefixed name of kernel `name` of the file at `path`; NotExtractable if that
        file's module cannot be built or has no such kernel."""
        if path not in self.modules:
            if len(self.modules) >= MAX_FOLLOWED:
                raise NotExtractable(f"more than {MAX_FOLLOWED} files of jit functions")
            self.modules[path] = "being built"  # an import cycle reads as not extractable
            prefix = f"{DEPENDENCY_PREFIX}{len(self.modules)}_"
            try:
                ex = _build(read(path), str(path), self, read)
            except (OSError, ValueError) as exc:  # NotExtractable, an unreadable file
                self.modules[path] = f"{path.name}: {exc}"
                raise NotExtractable(self.modules[path]) from None
            self.modules[path] = (prefix, _prefixed(ex, prefix), frozenset(ex.kernels)
                                  | frozenset(ex.kernel_names))
            self.refused.update({(path, k): why for k, why in ex.refused.items()})
            self.order.append(path)
        built = self.modules[path]
        if isinstance(built, str):
            raise NotExtractable(built)
        prefix, _, kernels = built
        if name not in kernels:
            why = self.refused.get((path, name))
            raise NotExtractable(f"{path.name}: {why}" if why else
                                 f"{path.name}: {name} is not a top-level triton.jit kernel")
        return prefix + name

    def statements(self) -> list[ast.stmt]:
        return [s for path in self.order for s in self.modules[path][1]]  # type: ignore[index]


def _prefixed(ex: "_Extractor", prefix: str) -> list[ast.stmt]:
    """`ex`'s kept statements with every top-level name it binds prefixed, inside kernel
    bodies too (a kernel's own parameters and locals excepted); `__future__` imports dropped
    and, under them, every annotation written as the string it was."""
    top: set[str] = set(ex.constants) | set(ex.kernels) | set(ex.dependencies) \
        | set(ex.kernel_names)
    for stmt in ex.kept:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            top |= {a.asname or a.name.split(".")[0] for a in stmt.names}

    class Rename(ast.NodeTransformer):
        def __init__(self, local: set[str]) -> None:
            self.local = local

        def visit_Name(self, node: ast.Name) -> ast.Name:
            if node.id in top and node.id not in self.local:
                node.id = prefix + node.id
            return node

    out: list[ast.stmt] = []
    for stmt in ex.kept:
        if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
            continue
        if isinstance(stmt, ast.Import):
            names = []
            for a in stmt.names:
                bound = a.asname or a.name.split(".")[0]
                names.append(ast.alias(name=a.name if a.asname else bound, asname=prefix + bound))
            out.append(ast.Import(names=names))
        elif isinstance(stmt, ast.ImportFrom):
            out.append(ast.ImportFrom(module=stmt.module, level=0, names=[
                ast.alias(name=a.name, asname=prefix + (a.asname or a.name))
                for a in stmt.names]))
        elif isinstance(stmt, ast.FunctionDef):
            every = [a for a in ast.walk(stmt.args) if isinstance(a, ast.arg)]
            for arg in every:
                if arg.annotation is not None:
                    arg.annotation = Rename(set()).visit(arg.annotation)
                    if ex.future_annotations and not isinstance(arg.annotation, ast.Constant):
                        arg.annotation = ast.Constant(ast.unparse(arg.annotation))
            if stmt.returns is not None:
                stmt.returns = Rename(set()).visit(stmt.returns)
                if ex.future_annotations and not isinstance(stmt.returns, ast.Constant):
                    stmt.returns = ast.Constant(ast.unparse(stmt.returns))
            body = [n for s in stmt.body for n in ast.walk(s)]
            local = {a.arg for a in every} | {n.arg for n in body if isinstance(n, ast.arg)}
            local |= {n.id for n in body if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            stmt.body = [Rename(local).visit(s) for s in stmt.body]
            stmt.args.defaults = [Rename(set()).visit(d) for d in stmt.args.defaults]
            stmt.args.kw_defaults = [d if d is None else Rename(set()).visit(d)
                                     for d in stmt.args.kw_defaults]
            stmt.decorator_list = [Rename(set()).visit(d) for d in stmt.decorator_list]
            stmt.name = prefix + stmt.name
            out.append(stmt)
        else:
            out.append(Rename(set()).visit(stmt))
    return out


class _Extractor:
    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}  # name bound by a kept import -> dotted path
        self.constants: set[str] = set()
        self.kernels: dict[str, ast.FunctionDef] = {}
        # a top-level function no decorator makes a kernel, until `f = triton.jit(f)` does
        self.undecorated: dict[str, ast.FunctionDef] = {}
        self.kernel_names: dict[str, str] = {}  # another name bound to a kernel -> the kernel
        self.kept: list[ast.stmt] = []
        # name bound by an import of an ANNOTATION_LIBRARIES module -> its dotted path
        self.libraries: dict[str, str] = {}
        self.bound: set[str] = set()  # every name the file binds anywhere
        self.future_annotations = False
        self.filename = ""
        # a name imported from another file of the kernel's package -> (that file, its name)
        self.foreign: dict[str, tuple[Path, str]] = {}
        self.dependencies: dict[str, str] = {}  # such a name a kernel calls -> prefixed kernel
        # a name bound to another file of the kernel's package, a module -> that file
        self.foreign_modules: dict[str, Path] = {}
        self.linked: set[str] = set()  # prefixed kernels a body names as `module.kernel`
        self.refused: dict[str, str] = {}  # a kernel left out of the module -> why
        self.followed: _Followed | None = None
        self.read = None

    def annotation_name(self, note: ast.expr) -> str:
        """The string Triton reads from a non-Triton annotation: the `__name__` of the class
        it names in ANNOTATION_LIBRARIES; NotExtractable for anything else."""
        dotted = _dotted(note)
        if dotted is None:
            raise NotExtractable("an annotation that is not a name")
        root, attrs = dotted
        if root in self.libraries:
            path = [*self.libraries[root].split("."), *attrs]
        elif not attrs and root not in self.bound:
            path = ["builtins", root]
        else:
            raise NotExtractable(f"an annotation that is not Triton's: {ast.unparse(note)}")
        if any(p.startswith("_") for p in path):
            raise NotExtractable(f"an annotation that is not Triton's: {ast.unparse(note)}")
        obj: object = importlib.import_module(path[0])
        for part in path[1:]:
            obj = getattr(obj, part, None)
        if not isinstance(obj, type):
            raise NotExtractable(f"an annotation that is not a class: {ast.unparse(note)}")
        return obj.__name__

    def path_of(self, node: ast.expr) -> str | None:
        dotted = _dotted(node)
        if dotted is None or dotted[0] not in self.aliases:
            return None
        return ".".join([self.aliases[dotted[0]], *dotted[1]])

    def static(self, node: ast.expr) -> bool:
        """A value fixed by the source alone: literals, arithmetic on them, the module's
        constants, names inside Triton's language (tl.float32), tl.constexpr(...) of those, and
        math's functions of those (`math.sqrt(2 / math.pi)`: pure, a float Triton's compiler
        refuses or takes as it would the module's own)."""
        if isinstance(node, ast.Constant):
            return True
        if isinstance(node, (ast.Tuple, ast.List)):
            return all(self.static(e) for e in node.elts)
        if isinstance(node, ast.UnaryOp):
            return self.static(node.operand)
        if isinstance(node, ast.BinOp):
            return self.static(node.left) and self.static(node.right)
        if isinstance(node, ast.Name) and node.id in self.constants:
            return True
        if isinstance(node, ast.Call):
            path = self.path_of(node.func)
            return (path is not None and (path.endswith(".constexpr") or path.startswith("math."))
                    and not node.keywords and self._reachable(path)
                    and all(self.static(a) for a in node.args))
        path = self.path_of(node)
        return path is not None and self._reachable(path)

    @staticmethod
    def _reachable(path: str) -> bool:
        try:
            _resolve(path)
        except NotExtractable:
            return False
        return True

    def take(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in ANNOTATION_LIBRARIES:
                    self.libraries[a.asname or a.name.split(".")[0]] = (
                        a.name if a.asname else a.name.split(".")[0])
            names = [a for a in node.names if a.name.split(".")[0] in IMPORTABLE]
            for a in names:
                self.aliases[a.asname or a.name.split(".")[0]] = (a.name if a.asname
                                                                  else a.name.split(".")[0])
            if names:
                self.kept.append(ast.Import(names=names))
        elif isinstance(node, ast.ImportFrom):
            if any(a.name == "*" for a in node.names):
                self.take_star(node)
                return
            package = bool(self.filename) and bool(
                node.level or (node.module and node.module.split(".")[0] not in
                               (*IMPORTABLE, *ANNOTATION_LIBRARIES, "torch")))
            path = module_file(self.filename, node.module, node.level) if package else None
            folder = package_folder(self.filename, node.module, node.level) if package \
                else None
            modules = {a.asname or a.name: folder / f"{a.name}.py" for a in node.names
                       if folder is not None and (folder / f"{a.name}.py").is_file()}
            self.foreign_modules.update(modules)
            if path is not None:  # another file of the kernel's package: read if a kernel calls
                self.foreign.update({a.asname or a.name: (path, a.name) for a in node.names
                                     if (a.asname or a.name) not in modules})
            if path is not None or modules:
                return
            if node.level != 0 or not node.module:
                return
            if node.module == "__future__":
                self.future_annotations |= any(a.name == "annotations" for a in node.names)
            if node.module.split(".")[0] in ANNOTATION_LIBRARIES:
                self.libraries.update({a.asname or a.name: f"{node.module}.{a.name}"
                                       for a in node.names})
            names = (node.names if exists_here(node.module) else []) \
                if node.module.split(".")[0] in IMPORTABLE else [
                # elsewhere, only what lies inside a module a body may reach (inductor's
                # `from torch._inductor.runtime import triton_helpers`)
                a for a in node.names if self._reachable(f"{node.module}.{a.name}")]
            for a in names:
                self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
            if names:
                self.kept.append(ast.ImportFrom(module=node.module, names=names, level=0))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            plain = all(isinstance(t, ast.Name) and t.id not in self.aliases for t in targets)
            jitted = self.jitted_by_a_call(node)
            if jitted is not None:
                self.take(jitted)
            elif plain and isinstance(node.value, ast.Name) and node.value.id in self.kernels:
                # another name for a kernel (gemlite's `swizzle_tile = swizzle_tile_v1`)
                self.kernel_names.update({t.id: node.value.id for t in targets})
                self.kept.append(ast.Assign(targets=targets, value=node.value, lineno=0))
            elif node.value is not None and plain \
                    and self.static(node.value):  # an import's name is never rebound
                self.constants.update(t.id for t in targets)  # type: ignore[attr-defined]
                self.kept.append(ast.Assign(targets=targets, value=node.value, lineno=0))
        elif isinstance(node, ast.FunctionDef):
            jit = next((d for d in node.decorator_list if self.is_jit(d)), None)
            if jit is not None and node.name not in self.aliases:
                if isinstance(jit, ast.Call):
                    jit.keywords = [k for k in jit.keywords if k.arg not in NAMING_KEYWORDS]
                node.decorator_list = [jit]
                self.kernels[node.name] = node
                self.kept.append(node)
            elif not node.decorator_list:
                self.undecorated[node.name] = node

    def jitted_by_a_call(self, node: ast.Assign | ast.AnnAssign) -> ast.FunctionDef | None:
        """`f = triton.jit(f)` (unsloth's RoPE kernels, jitted after their definition, then
        `f = triton.heuristics(...)(f)`, which is dropped as its decorator would be): the
        function `f` as if decorated so; None for any other assignment."""
        call = node.value
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and isinstance(call, ast.Call)
                and len(call.args) == 1 and isinstance(call.args[0], ast.Name)
                and call.args[0].id == node.targets[0].id
                and call.args[0].id in self.undecorated):
            return None
        decorator = ast.Call(func=call.func, args=[], keywords=call.keywords) \
            if call.keywords else call.func
        if not self.is_jit(decorator):
            return None
        function = self.undecorated.pop(call.args[0].id)
        function.decorator_list = [decorator]
        return function

    def take_star(self, node: ast.ImportFrom) -> None:
        """`from .utils import *` of another file of the kernel's package (gemlite's kernel
        files take their tile helpers so): each function or assigned name it exports (its
        `__all__` of constant names, or its public names) is bound as a name imported from
        it one by one is, read from the file if a kernel calls it (a kernel of that file, or
        another name for one). A star import from anywhere else binds nothing the judge
        knows."""
        if not self.filename or self.read is None or not (node.level or (
                node.module and node.module.split(".")[0] not in (*IMPORTABLE, "torch"))):
            return
        path = module_file(self.filename, node.module, node.level)
        if path is None:
            return
        try:
            tree = ast.parse(self.read(path), filename=str(path))
        except (OSError, SyntaxError, ValueError):
            return  # no name bound: a kernel that calls one is refused for naming it
        exported = next((stmt.value for stmt in tree.body if isinstance(stmt, ast.Assign)
                         and any(isinstance(t, ast.Name) and t.id == "__all__"
                                 for t in stmt.targets)), None)
        names = {stmt.name for stmt in tree.body if isinstance(stmt, ast.FunctionDef)} | {
            t.id for stmt in tree.body if isinstance(stmt, ast.Assign)
            for t in stmt.targets if isinstance(t, ast.Name)}  # another name for a kernel
        if isinstance(exported, (ast.List, ast.Tuple)) and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in exported.elts):
            names &= {e.value for e in exported.elts}
        else:
            names = {n for n in names if not n.startswith("_")}
        self.foreign.update({n: (path, n) for n in names})

    def take_alternatives(self, node: ast.If | ast.Try) -> None:
        """A module-level `if` or `try`: its imports from every branch, its definitions from
        the branch this extraction takes (the module docstring)."""
        self._take_imports(node)
        self._take_definitions(node)

    def _take_imports(self, node: ast.If | ast.Try) -> None:
        for stmt in (s for branch in _branches(node) for s in branch):
            if isinstance(stmt, (ast.If, ast.Try)):
                self._take_imports(stmt)
            elif isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module:
                for a in stmt.names:
                    name = a.asname or a.name
                    if a.name != "*" and name not in self.aliases and \
                            self._reachable(f"{stmt.module}.{a.name}"):
                        self.take(ast.ImportFrom(module=stmt.module, names=[a], level=0))
            elif isinstance(stmt, ast.Import):
                for a in stmt.names:
                    if (a.asname or a.name.split(".")[0]) not in self.aliases and \
                            importlib.util.find_spec(a.name.split(".")[0]) is not None:
                        self.take(ast.Import(names=[a]))

    def _take_definitions(self, node: ast.If | ast.Try) -> None:
        alternatives = _alternatives(node)
        if not any(isinstance(s, (*DEFINITIONS, ast.If, ast.Try))
                   for branch in alternatives for s in branch) or self.followed is None:
            return
        key = (self.filename, node.lineno)
        self.followed.switches[key] = len(alternatives)
        self.followed.defines.setdefault(key, set()).update(_switch_defines(node))
        if triton_kernel_names(node):
            self.followed.define_kernels.add(key)
        for stmt in map(_as_switch, alternatives[self.followed.choice.get(key, 0)]):
            if isinstance(stmt, (ast.If, ast.Try)):
                self._take_definitions(stmt)
            elif isinstance(stmt, DEFINITIONS):
                self.take(stmt)

    def is_jit(self, decorator: ast.expr) -> bool:
        call = decorator if isinstance(decorator, ast.Call) else None
        path = self.path_of(call.func if call else decorator)
        return path in JIT_DECORATORS and (call is None or (not call.args and all(
            self.static(k.value) for k in call.keywords if k.arg not in NAMING_KEYWORDS)))

    def annotation(self, fn: ast.FunctionDef, note: ast.expr | None) -> ast.expr | None:
        """`note` as the judge's module writes it (the module docstring)."""
        if note is None or (isinstance(note, ast.Constant) and isinstance(note.value, str)):
            return note
        if self.future_annotations:
            return note  # never evaluated: the string of its source, as in the file
        if self.static(note) or self.triton_type(note):
            return note
        try:
            return ast.Constant(self.annotation_name(note))
        except NotExtractable as exc:
            raise NotExtractable(f"{fn.name}: {exc}") from None

    def triton_type(self, note: ast.expr) -> bool:
        """`note` builds one of Triton's types from constants (`tl.pointer_type(tl.int64)`,
        as torchtitan types its MoE metadata kernels' pointers): Triton reads the signature's
        type from the object (`*i64`), and building it runs only Triton's type constructor."""
        if not isinstance(note, ast.Call):
            return False
        path = self.path_of(note.func)
        if path is None or not self._reachable(path):
            return False
        made = _resolve(path)
        dtype = importlib.import_module("triton.language.core").dtype
        return isinstance(made, type) and issubclass(made, dtype) and all(
            self.static(a) for a in [*note.args, *(k.value for k in note.keywords)])

    def check_kernel(self, fn: ast.FunctionDef) -> None:
        """What the body may name (the module docstring)."""
        args = fn.args
        for default in [*args.defaults, *args.kw_defaults]:
            if default is not None and not self.static(default):
                raise NotExtractable(f"{fn.name}: a default that is not a constant")
        every = [a for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg,
                             args.kwarg] if a is not None]
        for arg in every:
            arg.annotation = self.annotation(fn, arg.annotation)
        fn.returns = self.annotation(fn, fn.returns)
        body = [node for stmt in fn.body for node in ast.walk(stmt)]  # not the decorator
        local = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}
        local |= {n.arg for n in body if isinstance(n, ast.arg)}  # a lambda's
        local |= {n.id for n in body if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        if any(isinstance(n, ast.Name) and n.id in self.foreign_modules for n in body):
            fn.body = [_Linker(self, fn, local).visit(stmt) for stmt in fn.body]
            body = [node for stmt in fn.body for node in ast.walk(stmt)]
        module = set(self.kernels) | self.constants | self.linked | set(self.kernel_names)
        inner = {id(n.value) for n in body if isinstance(n, ast.Attribute)}
        for node in body:
            if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
                raise NotExtractable(f"{fn.name}: names a private attribute .{node.attr}")
            if isinstance(node, (ast.Global, ast.Nonlocal, ast.Import, ast.ImportFrom)):
                raise NotExtractable(f"{fn.name}: {type(node).__name__.lower()} in a kernel")
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) \
                    and node.id not in local | module | BUILTINS:
                named = self.kernel_names.get(node.id, node.id)
                if named in self.refused:  # calls a kernel left out: left out for its reason
                    raise NotExtractable(self.refused[named])
                if node.id in self.foreign and node.id not in self.bound_here:
                    self.follow(fn, node.id)
                elif node.id not in self.aliases:
                    raise NotExtractable(f"{fn.name}: names {node.id}, which is not a "
                                         f"constant, a kernel or Triton's")
            if id(node) in inner or not isinstance(node, (ast.Attribute, ast.Name)):
                continue  # a whole path is checked at once, from its last attribute
            root = _dotted(node)
            path = self.path_of(node)
            if path is not None and root is not None and root[0] not in local \
                    and isinstance(_resolve(path), types.ModuleType):
                # Held as a value, a module would let a local reach what the judge never
                # resolved (t = tl.core; t.os).
                raise NotExtractable(f"{fn.name}: uses module {path} as a value")


    @property
    def bound_here(self) -> set[str]:
        """Names the module binds otherwise than by the import (rebinding it: not followed)."""
        return set(self.kernels) | self.constants | set(self.aliases) | set(self.kernel_names)

    def follow(self, fn: ast.FunctionDef, name: str) -> None:
        if name in self.dependencies:
            return
        path, original = self.foreign[name]
        if self.followed is None or self.read is None:
            raise NotExtractable(f"{fn.name}: names {name}, from another file")
        try:
            self.dependencies[name] = self.followed.kernel(path, original, self.read)
        except NotExtractable as exc:
            raise NotExtractable(f"{fn.name}: names {name}, from {exc}") from None

    def link(self, fn: ast.FunctionDef, module: str, name: str) -> str:
        """The prefixed kernel that `module.name` in a body names, `module` bound to another
        file of the kernel's package: that file's jit function `name`, read as `follow` reads
        one imported by name."""
        if self.followed is None or self.read is None:
            raise NotExtractable(f"{fn.name}: names {module}.{name}, from another file")
        try:
            linked = self.followed.kernel(self.foreign_modules[module], name, self.read)
        except NotExtractable as exc:
            raise NotExtractable(f"{fn.name}: names {module}.{name}, from {exc}") from None
        self.linked.add(linked)
        return linked


class _Linker(ast.NodeTransformer):
    """A kernel body's `module.kernel`, `module` a file of the kernel's package, as the name of
    the judge's prefixed copy of that kernel (_Extractor.link); the module itself, used any
    other way, stays a name the body may not load."""

    def __init__(self, ex: _Extractor, fn: ast.FunctionDef, local: set[str]) -> None:
        self.ex, self.fn, self.local = ex, fn, local

    def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
        value = node.value
        if isinstance(value, ast.Name) and value.id in self.ex.foreign_modules and \
                value.id not in self.local | self.ex.bound_here and not node.attr.startswith("_"):
            linked = self.ex.link(self.fn, value.id, node.attr)
            return ast.copy_location(ast.Name(linked, ast.Load()), node)
        return self.generic_visit(node)


DEFINITIONS = (ast.FunctionDef, ast.Assign, ast.AnnAssign)  # what a switch's branch may define


def _reached(tree: ast.Module, names: frozenset[str]) -> dict[str, frozenset[str]]:
    """For each of `names`, the source of every top-level statement of a judge's module that
    its definition reaches, through the names it loads, transitively."""
    defined: dict[str, ast.stmt] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef):
            defined[stmt.name] = stmt
        elif isinstance(stmt, ast.Assign):
            defined.update({t.id: stmt for t in stmt.targets if isinstance(t, ast.Name)})
    sources = {id(stmt): ast.unparse(stmt) for stmt in set(defined.values())}
    out = {}
    for name in names:
        reached, todo = set(), [name]
        while todo:
            stmt = defined.get(todo.pop())
            if stmt is None or id(stmt) in reached:
                continue
            reached.add(id(stmt))
            todo += [n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)]
        out[name] = frozenset(sources[i] for i in reached)
    return out


def _defined(stmt: ast.stmt) -> list[str]:
    """The names a switch's statement binds at module level."""
    if isinstance(stmt, ast.FunctionDef):
        return [stmt.name]
    targets = stmt.targets if isinstance(stmt, ast.Assign) else \
        [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
    return [t.id for t in targets if isinstance(t, ast.Name)]


def _switch_defines(node: ast.If | ast.Try) -> set[str]:
    """The names a switch binds at module level, in its nested switches too."""
    return {name for branch in _alternatives(node) for stmt in map(_as_switch, branch)
            for name in (_switch_defines(stmt) if isinstance(stmt, (ast.If, ast.Try))
                         else _defined(stmt))}


def _as_switch(stmt: ast.stmt) -> ast.stmt:
    """A module-level definition that chooses by a conditional expression (`X =
    tl.constexpr(a if C else b)`, `@triton.jit(do_not_specialize=a if C else b)`: fla's, on
    flags of its own) as the `if` it amounts to, so that both ways are taken as a switch's."""
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
        places = [stmt.value]
    elif isinstance(stmt, ast.FunctionDef):
        places = list(stmt.decorator_list)
    else:
        return stmt
    if not any(isinstance(n, ast.IfExp) for place in places if place is not None
               for n in ast.walk(place)):
        return stmt
    first = next(n for place in places if place is not None for n in ast.walk(place)
                 if isinstance(n, ast.IfExp))
    ways = []
    for branch in ("body", "orelse"):
        copied: dict[int, object] = {}
        way = copy.deepcopy(stmt, copied)
        chosen = copied[id(first)]
        ways.append(_Replace(chosen, getattr(chosen, branch)).visit(way))
    return ast.copy_location(ast.If(test=first.test, body=[ways[0]], orelse=[ways[1]]), stmt)


class _Replace(ast.NodeTransformer):
    def __init__(self, old: ast.AST, new: ast.AST) -> None:
        self.old, self.new = old, new

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if node is self.old:
            return self.new
        return super().generic_visit(node)


def _branches(node: ast.If | ast.Try) -> list[list[ast.stmt]]:
    """Every block of a switch, each alone."""
    branches = [node.body, node.orelse]
    if isinstance(node, ast.Try):
        branches += [h.body for h in node.handlers] + [node.finalbody]
    return branches


def _alternatives(node: ast.If | ast.Try) -> list[list[ast.stmt]]:
    """The ways through a switch, each the statements it runs: an `if`'s two branches; a
    `try`'s body and else, or one of its handlers, each followed by its finally."""
    if isinstance(node, ast.If):
        return [node.body, node.orelse]
    ways = [node.body + node.orelse] + [h.body for h in node.handlers]
    return [way + node.finalbody for way in ways]


def bound_names(tree: ast.AST) -> set[str]:
    """Every name `tree` binds anywhere: assigned, defined, imported."""
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and
             isinstance(n.ctx, (ast.Store, ast.Del))}
    names |= {n.name for n in ast.walk(tree)
              if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    names |= {(a.asname or a.name).split(".")[0] for n in ast.walk(tree)
              if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    return names


TRITON_DECORATOR_NAMES = ("jit", "autotune", "heuristics")  # what makes a function a kernel


def triton_kernel_names(tree: ast.AST) -> frozenset[str]:
    """The functions of a parsed module that a Triton decorator (`triton.jit`, an autotuner's
    or a heuristic's, under any alias) makes a kernel, wherever they are defined."""
    def is_triton(decorator: ast.expr) -> bool:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        return name in TRITON_DECORATOR_NAMES

    return frozenset(node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)
                     and any(is_triton(d) for d in node.decorator_list))


def _read(path: Path) -> bytes:
    from kdiff.data.files import read_regular_file
    return read_regular_file(path)


def _build(source: bytes, filename: str, followed: _Followed, read) -> _Extractor:
    try:
        tree = ast.parse(source, filename=filename)
    except (SyntaxError, ValueError) as exc:
        raise NotExtractable(f"{filename}: does not parse: {exc}") from None
    ex = _Extractor()
    ex.bound = bound_names(tree)
    ex.filename, ex.followed, ex.read = filename, followed, read
    for node in map(_as_switch, tree.body):
        if isinstance(node, (ast.If, ast.Try)):
            ex.take_alternatives(node)
        else:
            ex.take(node)
    refusing = True
    while refusing:  # until no kernel left calls one left out
        refusing = False
        for name, fn in list(ex.kernels.items()):
            try:
                ex.check_kernel(fn)
            except NotExtractable as exc:
                ex.refused[name] = str(exc)
                del ex.kernels[name]
                ex.kept.remove(fn)
                refusing = True
    for name, kernel in list(ex.kernel_names.items()):  # names of kernels left out go too
        if kernel not in ex.kernels:
            del ex.kernel_names[name]
            ex.kept = [s for s in ex.kept if not (isinstance(s, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name for t in s.targets))]
    if ex.refused and not ex.kernels:
        raise NotExtractable(next(iter(ex.refused.values())))
    return ex


def _extraction(source: bytes, filename: str, read, followed: _Followed) -> ExtractedModule:
    """The judge's module taking the branches `followed.choice` names (the switches it meets
    are left in `followed.switches`, also when it raises)."""
    ex = _build(source, filename, followed, read)
    future = [s for s in ex.kept if isinstance(s, ast.ImportFrom) and s.module == "__future__"]
    rest = [s for s in ex.kept if s not in future]
    bind = [ast.Assign(targets=[ast.Name(name, ast.Store())], value=ast.Name(kernel, ast.Load()),
                       lineno=0) for name, kernel in ex.dependencies.items()]
    body = future + followed.statements() + bind + rest
    module = ast.fix_missing_locations(ast.Module(body=body, type_ignores=[]))
    return ExtractedModule(ast.unparse(module) + "\n", frozenset(ex.kernels),
                           tuple(str(p) for p in followed.order), tuple(ex.refused.items()))


def _switches_used(followed: _Followed, module: ExtractedModule | None, filename: str
                   ) -> list[tuple[str, int]]:
    """The switches of `filename` itself that define a kernel (a launch names it, though
    nothing else may) or a name the judge's `module` of it uses, and those of followed files
    whose names `module` uses (every switch met, where it could not be built): a switch no
    kernel reaches changes nothing (unsloth's fp8.py has thirteen around its kernels, `try:
    from transformers... import FP8Linear` / `except: FP8Linear = None` and the like, 2^13
    combinations of the same kernels)."""
    if module is None:
        return list(followed.switches)
    used = {n.id for n in ast.walk(ast.parse(module.text))
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    keys = []
    for key, names in followed.defines.items():
        own = key[0] == filename
        prefix = "" if own else followed.prefix(key[0])
        if prefix is None or (own and key in followed.define_kernels) \
                or any(prefix + name in used for name in names):
            keys.append(key)
    return keys


def extract(source: bytes, filename: str, read=_read) -> ExtractedModule:
    """The module the judge builds from `source` (module docstring); NotExtractable when a
    kernel of it needs more. `read` reads a followed file (a regular file of bounded size).

    A module-level `if` or `try` whose branches define jit functions or constants (fla's
    `exp`, fast or not by an environment variable) is taken every way: which way the
    candidate's process went is its own word. The first combination of branches that builds
    is the module; each further one, up to MAX_VARIANTS, is an alternative, which RES-02
    compiles as well (a kernel must fit every way it can be built)."""
    first = _Followed()
    try:
        built = [_extraction(source, filename, read, first)]
        failure = None
    except NotExtractable as exc:
        built, failure = [], exc
    keys = sorted(_switches_used(first, built[0] if built else None, filename))
    combinations = list(itertools.islice(itertools.product(
        *(range(first.switches[k]) for k in keys)), MAX_VARIANTS + 1))
    if len(combinations) > MAX_VARIANTS:
        # where the first way did not build, its reason is the one a reader can act on
        first_way = f"; the first way: {failure}" if failure else ""
        raise NotExtractable(f"{filename}: more than {MAX_VARIANTS} combinations of module-level "
                             f"branches that define jit functions{first_way}")
    for combination in combinations[1:]:
        try:
            built.append(_extraction(source, filename, read,
                                     _Followed(dict(zip(keys, combination)))))
        except NotExtractable:
            continue  # nothing builds this way: the candidate's process went another
    if not built:
        raise failure  # type: ignore[misc]
    module, others = built[0], built[1:]
    kernels = module.kernels.union(*(m.kernels for m in others))
    return dataclasses.replace(
        module, alternatives=tuple((m.text, m.kernels) for m in others),
        followed=tuple(sorted(set(module.followed).union(*(m.followed for m in others)))),
        refused=tuple((k, why) for k, why in module.refused if k not in kernels))


def followed_files(path: str) -> tuple[str, ...]:
    """The other files whose jit functions the judge's module of `path` takes; () where it
    cannot be built."""
    try:
        return extract(_read(Path(path)), path).followed
    except (OSError, ValueError):
        return ()
