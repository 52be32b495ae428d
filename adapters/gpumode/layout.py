"""GPU MODE's problem layout, as gpu-mode/reference-kernels (at f83cb92) keeps it and
gpu-mode/kernelbot (at 4bdd839, `src/libkernelbot/task.py`, `run_eval.py`) reads it.

- A problem is a folder with `task.yml` (and, through it, a `reference.py`). task.yml's `files` maps each file
  name the harness's working directory gets to its source, relative to the problem folder
  (`../utils.py`, `../eval.py`); the source `@SUBMISSION@` is the submission, written as
  `submission.py`. `tests` and `benchmarks` are lists of argument dicts for
  `generate_input(**args)`, each with its `seed`.
- reference.py defines `generate_input(**args)`, `ref_kernel(data)` and
  `check_implementation(data, output) -> (ok, message)`; a submission defines
  `custom_kernel(data)`.
- Some problems ship labelled submissions: `solutions/correct/*.py` and
  `solutions/wrong/*.py` (pmpp, pmpp_v2); some unlabelled ones in `submissions/` (linalg).
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

import yaml

SUBMISSION = "@SUBMISSION@"
# The names every materialised problem module defines itself: a test argument of one of
# these names could not be a module constant beside them.
RESERVED = frozenset({"TESTS", "TEST", "REFERENCE", "Model", "get_inputs", "get_init_inputs",
                      "KDIFF_VARIANTS", "Path", "data"})


class LayoutError(Exception):
    """A problem folder that cannot be read as the harness reads it (one line)."""


class Label(str, Enum):
    CORRECT = "correct"
    WRONG = "wrong"
    UNLABELLED = "unlabelled"


@dataclass(frozen=True)
class Problem:
    id: str  # the folder, relative to the root discovered from (`pmpp_v2/vectoradd_py`)
    folder: Path
    tests: list[dict]
    benchmarks: list[dict]
    files: dict[str, Path] = field(default_factory=dict)  # name -> source, the submission aside
    # The problem's eval.py captures the submission in a CUDA graph after a warm-up call
    # (helion/eval.py): the native check calls it twice, as that harness does.
    graph_capture: bool = False

    @property
    def reference(self) -> Path:
        return self.files["reference.py"]


def problems_root(root: Path) -> Path:
    """`root` is a reference-kernels checkout (with `problems/`) or any folder below it."""
    return root / "problems" if (root / "problems").is_dir() else root


def find_problems(root: Path) -> list[Path]:
    base = problems_root(root)
    return sorted(p.parent for p in base.rglob("task.yml"))


def _argument_dicts(task: dict, key: str, path: Path) -> list[dict]:
    items = task.get(key) or []
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise LayoutError(f"{path}: `{key}` is not a list of argument mappings")
    for item in items:
        bad = [k for k in item if not str(k).isidentifier() or k in RESERVED]
        if bad:
            raise LayoutError(f"{path}: `{key}` argument name(s) kdiff cannot carry: {bad}")
    return items


def read_problem(folder: Path, base: Path) -> Problem:
    path = folder / "task.yml"
    try:
        task = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise LayoutError(f"{path}: not readable YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(task, dict):
        raise LayoutError(f"{path}: not a mapping")
    if task.get("lang", "py") != "py":
        raise LayoutError(f"{path}: lang {task.get('lang')!r}; kdiff judges Python problems")
    tests = _argument_dicts(task, "tests", path)
    if not tests:
        raise LayoutError(f"{path}: no tests")
    files: dict[str, Path] = {}
    for entry in task.get("files") or [{"name": "reference.py", "source": "reference.py"}]:
        if entry.get("source") != SUBMISSION:
            files[entry["name"]] = (folder / entry["source"]).resolve()
    files.setdefault("reference.py", folder / "reference.py")
    missing = [n for n, p in files.items() if not p.is_file()]
    if missing:
        raise LayoutError(f"{path}: file(s) not found: {', '.join(missing)}")
    evaluator = files.get("eval.py")
    graph = evaluator is not None and "torch.cuda.graph(" in evaluator.read_text(encoding="utf-8")
    return Problem(folder.resolve().relative_to(base.resolve()).as_posix(), folder, tests,
                   _argument_dicts(task, "benchmarks", path), files, graph)


def solutions(problem: Problem) -> list[tuple[Path, Label]]:
    out = []
    for sub, label in (("solutions/correct", Label.CORRECT), ("solutions/wrong", Label.WRONG),
                       ("submissions", Label.UNLABELLED)):
        out += [(p, label) for p in sorted((problem.folder / sub).glob("*.py"))]
    return out


def selected(problem_id: str, patterns: list[str] | None) -> bool:
    return not patterns or any(fnmatch.fnmatch(problem_id, p) or problem_id == p
                               for p in patterns)


def spec(args: dict) -> str:
    """A test as the harness writes it into its tests file (run_eval.build_test_string)."""
    return "; ".join(f"{k}: {v}" for k, v in args.items())
