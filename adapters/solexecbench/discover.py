"""SOL-ExecBench cases: each solution beside a definition, against it.

`--root` is a folder holding definition folders at any depth (SOL-ExecBench's `examples/`):
a definition folder has definition.json and workload.jsonl, and its solutions are the
`solution*.json` files beside them. `--problems` keeps definitions whose name or folder (relative
to the root) matches a pattern. A definition or solution that cannot be read, or a solution in
a compiled language (cuda_cpp, cutlass, cudnn, cublas: upstream builds them on its compile
server), is a case with `discovery_error`.
"""
from __future__ import annotations

import fnmatch
from pathlib import Path

from kdiff.adapters.solexecbench.layout import (
    LayoutError,
    read_definition,
    read_solution,
    read_workloads,
)
from kdiff.adapters.solexecbench.materialise import prepare_candidate, prepare_problem
from kdiff.data.model import Case
from kdiff.judging.hookspecs import DiscoveryError
from kdiff.judging.runconfig import RunConfig

BENCH = "solexecbench"


def _cases(folder: Path, solutions: list[Path], name: str) -> list[Case]:
    try:
        definition = read_definition(folder / "definition.json")
        read_workloads(folder / "workload.jsonl")
        problem_py = prepare_problem(definition, folder)
    except (LayoutError, OSError) as exc:
        return [Case(name, folder / "definition.json", folder / "definition.json", BENCH,
                     discovery_error=str(exc))]
    cases = []
    for path in solutions:
        case_id = f"{definition.name}/{path.stem}"
        try:
            solution = read_solution(path)
            if not solution.python:
                raise LayoutError(f"{path}: languages {list(solution.languages)} are built by "
                                  "upstream's compile server; kdiff judges Python solutions")
        except LayoutError as exc:
            cases.append(Case(case_id, problem_py, path, BENCH, {"solution": str(path)},
                              discovery_error=str(exc)))
            continue
        cases.append(Case(case_id, problem_py, prepare_candidate(definition, problem_py, solution),
                          BENCH, {"solution": str(path), "languages": list(solution.languages),
                                  "destination_passing_style":
                                      solution.destination_passing_style}))
    return cases


def discover(config: RunConfig) -> list[Case]:
    if config.root is None:
        raise DiscoveryError("solexecbench needs --root (a folder of definition folders, such "
                             "as SOL-ExecBench's examples/)")
    folders = sorted(p.parent for p in config.root.rglob("definition.json")
                     if (p.parent / "workload.jsonl").is_file())
    if not folders:
        raise DiscoveryError(f"--root {config.root}: no definition.json beside a "
                             "workload.jsonl below it")
    cases: list[Case] = []
    for folder in folders:
        rel = folder.resolve().relative_to(config.root.resolve()).as_posix()
        if config.problems and not any(fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(
                folder.name, p) for p in config.problems):
            continue
        cases += _cases(folder, sorted(folder.glob("solution*.json")), rel)
    return cases


def case_from_paths(problem: Path, candidate: Path) -> Case:
    """`kdiff verify --bench solexecbench`: the definition folder (or its definition.json)
    and one solution json."""
    folder = problem if problem.is_dir() else problem.parent
    return _cases(folder, [candidate], folder.name)[0]
