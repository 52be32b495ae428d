"""GPU MODE cases: each labelled or unlabelled submission a problem ships, against its problem.

`--root` is a reference-kernels checkout, its `problems/` folder, or any folder below it (one
group, one problem); `--problems` keeps the problems whose id (`pmpp_v2/vectoradd_py`) matches
one of the patterns. A problem that cannot be read is one case with `discovery_error`.
"""
from __future__ import annotations

from pathlib import Path

from kdiff.adapters.gpumode.layout import (
    Label,
    LayoutError,
    find_problems,
    problems_root,
    read_problem,
    selected,
    solutions,
)
from kdiff.adapters.gpumode.materialise import prepare_candidate, prepare_problem
from kdiff.data.model import Case
from kdiff.judging.hookspecs import DiscoveryError
from kdiff.judging.runconfig import RunConfig

BENCH = "gpumode"


def _case(problem, problem_py: Path, submission: Path, label: Label) -> Case:
    candidate = prepare_candidate(problem, problem_py, submission, label)
    return Case(f"{problem.id}/{label.value}/{submission.stem}", problem_py, candidate, BENCH,
                {"label": label.value, "submission": str(submission),
                 "tests": len(problem.tests), "graph_capture": problem.graph_capture})


def discover(config: RunConfig) -> list[Case]:
    if config.root is None:
        raise DiscoveryError("gpumode needs --root (a gpu-mode/reference-kernels checkout, or "
                             "a folder of problems below it)")
    base = problems_root(config.root)
    folders = find_problems(config.root)
    if not folders:
        raise DiscoveryError(f"--root {config.root}: no problem folder (with a task.yml) "
                             "below it")
    cases: list[Case] = []
    for folder in folders:
        pid = folder.resolve().relative_to(base.resolve()).as_posix()
        if not selected(pid, config.problems):
            continue
        try:
            problem = read_problem(folder, base)
        except LayoutError as exc:
            cases.append(Case(pid, folder / "task.yml", folder / "task.yml", BENCH,
                              discovery_error=str(exc)))
            continue
        problem_py = prepare_problem(problem)
        cases += [_case(problem, problem_py, path, label) for path, label in solutions(problem)]
    return cases


def case_from_paths(problem: Path, candidate: Path) -> Case:
    """`kdiff verify --bench gpumode`: the problem folder (or a file in it) and one
    submission file."""
    folder = problem if problem.is_dir() else problem.parent
    labels = {"correct": Label.CORRECT, "wrong": Label.WRONG}
    label = (labels.get(candidate.parent.name, Label.UNLABELLED)
             if candidate.parent.parent.name == "solutions" else Label.UNLABELLED)
    try:
        parsed = read_problem(folder, folder.parent.parent)
    except LayoutError as exc:
        return Case(folder.name, folder / "task.yml", candidate, BENCH,
                    discovery_error=str(exc))
    return _case(parsed, prepare_problem(parsed), candidate, label)
