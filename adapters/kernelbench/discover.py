"""Finding KernelBench cases: problems in a checkout, candidates in runs folders, and the
verdicts the harness wrote down.

Layout (ScalingIntelligence/KernelBench):
- problems: `KernelBench/level{L}/{P}_{Name}.py`;
- a run: `runs/{RUN}/level_{L}_problem_{P}_sample_{S}_kernel.py`, and `eval_results.json`
  keyed by problem id (a string). Upstream has written three shapes of value over time: one
  sample record (`{"sample_id", "compiled", "correctness", "metadata", ...}`), a list of
  sample records, and a dict of sample records keyed by sample id. All three are read.

Candidate files are only parsed here (`ast`), never executed: they are untrusted and run in
their worker. With no --root, the shipped corpus (`kdiff.kernels`) is the checkout and each
folder under its `runs/` (controls, redteam) is a run.
"""
from __future__ import annotations

import ast
import fnmatch
import json
import os
import re
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

from kdiff.data.files import UnreadableFile, read_regular_file
from kdiff.data.model import Case
from kdiff.judging.hookspecs import DiscoveryError
from kdiff.judging.runconfig import RunConfig

BENCH = "kernelbench"
KERNEL_FILE = re.compile(r"level_(\d+)_problem_(\d+)_sample_(\d+)_kernel\.py")
# KernelBenchFiltered: `best_agent_solutions/level_{L}/task_{P}.py` beside `tasks/level_{L}/`.
TASK_FILE = re.compile(r"task_(\d+)\.py")
PROBLEM_FILE = re.compile(r"(\d+)_(.+)\.py")
LEVEL_DIR = re.compile(r"level_?(\d+)")
EVAL_RESULTS = "eval_results.json"
# eval_results.json: one record per sample (flags and the harness's metadata, compile logs
# included, a few KB). KernelBench's largest runs, 250 problems x 100 samples at up to 4 KB a
# record, come to 100 MB; JSON of that size takes a few GB to load, so no more is read.
MAX_RESULTS_BYTES = 128 << 20
# Keys of the header docstring every shipped candidate starts with (see kernels/).
HEADER_KEYS = ("kdiff-redteam", "kdiff-control", "expected-gates", "defect", "imitates",
               "requires")  # requires: cuda (or cpu): the defect shows only on that device
HEADER_LINE = re.compile(r"\s*(" + "|".join(HEADER_KEYS) + r")\s*:\s*(.*)")
DEFAULT_ENTRY = ("ModelNew",)
# KernelBenchFiltered-style runs name the candidate class `Model` (and redefine get_inputs,
# which kdiff ignores: inputs always come from the problem's own file).
MODEL_NAMED_ENTRY = ("ModelNew", "Model")


@dataclass
class Recorded:
    """One sample's result as the harness recorded it."""

    compiled: bool | None
    correctness: bool | None

    @property
    def accept(self) -> bool | None:
        if self.compiled is False:
            return False
        return self.correctness


@dataclass
class RunResults:
    samples: dict[tuple[int, int], Recorded] = field(default_factory=dict)  # (problem, sample)
    errors: list[str] = field(default_factory=list)


def shipped_corpus() -> Path:
    root = files("kdiff.kernels")
    if not isinstance(root, Path):  # e.g. a zipped install: the worker needs real files
        raise DiscoveryError(f"the shipped corpus is not on the file system ({root})")
    return root


# -- eval_results.json --------------------------------------------------------------------
def _flag(value: Any) -> bool | None:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise ValueError(f"expected a boolean, got {value!r}"[:120])


def _record(entry: Any) -> Recorded:
    if not isinstance(entry, dict):
        raise ValueError(f"expected a sample record, got {type(entry).__name__}")
    if "correctness" not in entry and "compiled" not in entry:
        raise ValueError("sample record has neither `compiled` nor `correctness`")
    return Recorded(_flag(entry.get("compiled")), _flag(entry.get("correctness")))


def _samples(value: Any) -> list[tuple[int, Any]]:
    """(sample id, record) pairs from any of the three upstream shapes."""
    if isinstance(value, dict) and ("correctness" in value or "compiled" in value):
        return [(int(value.get("sample_id", 0)), value)]
    if isinstance(value, list):
        return [(int(e["sample_id"]) if isinstance(e, dict) and "sample_id" in e else i, e)
                for i, e in enumerate(value)]
    if isinstance(value, dict):
        return [(int(k), e) for k, e in value.items()]
    raise ValueError(f"expected a sample record, a list or a dict, got {type(value).__name__}")


def read_eval_results(path: Path) -> RunResults:
    """The recorded verdicts of one run. Whatever cannot be read is listed in `errors` and
    the rest is kept."""
    out = RunResults()
    try:
        data = json.loads(read_regular_file(path, MAX_RESULTS_BYTES))
    except (OSError, UnreadableFile, UnicodeDecodeError, json.JSONDecodeError) as exc:
        out.errors.append(f"{path}: unreadable: {exc}")
        return out
    if not isinstance(data, dict):
        out.errors.append(f"{path}: expected an object keyed by problem id, "
                          f"got {type(data).__name__}")
        return out
    for key, value in data.items():
        try:
            problem = int(key)
            for sample, entry in _samples(value):
                out.samples[(problem, sample)] = _record(entry)
        except (ValueError, TypeError, KeyError) as exc:
            out.errors.append(f"{path}: problem {key!r}: {exc}")
    return out


# -- problems and candidates --------------------------------------------------------------
def problem_files(root: Path) -> dict[tuple[int, int], Path]:
    """(level, problem id) -> file, under `root/KernelBench` (or `root/tasks`, the
    KernelBenchFiltered layout) or `root` itself."""
    base = next((root / d for d in ("KernelBench", "tasks") if (root / d).is_dir()), root)
    out = {}
    for level_dir in sorted(base.iterdir()):
        m = LEVEL_DIR.fullmatch(level_dir.name)
        if not (m and level_dir.is_dir()):
            continue
        for f in sorted(level_dir.glob("*.py")):
            pm = PROBLEM_FILE.fullmatch(f.name)
            if pm:
                out[(int(m.group(1)), int(pm.group(1)))] = f
    return out


def _read(path: Path) -> tuple[bytes | None, str | None]:
    """The file's bytes, or why it cannot be read (then its case is an error row: bad input,
    not a kernel that failed)."""
    try:
        return read_regular_file(path), None
    except FileNotFoundError:  # a broken link: public runs keep kernels as links
        link = f" (a link to {os.readlink(path)})" if path.is_symlink() else ""
        return None, f"{path}: file not found{link}"
    except UnreadableFile as exc:
        return None, str(exc)
    except OSError as exc:
        return None, f"{path}: unreadable: {exc.strerror or exc}"


def _parse(path: Path) -> tuple[ast.Module | None, str | None]:
    """The module's syntax tree (None where it does not parse: the worker reports that as the
    candidate's failure), and why the file cannot be read at all."""
    source, unreadable = _read(path)
    if source is None:
        return None, unreadable
    try:
        return ast.parse(source, filename=str(path)), None
    except (SyntaxError, ValueError):
        return None, None


def candidate_header(tree: ast.Module | None) -> dict[str, str]:
    """The `key: value` fields of a candidate's header docstring; a value may wrap onto
    following lines."""
    doc = ast.get_docstring(tree) if tree is not None else None
    fields: dict[str, str] = {}
    key = None
    for line in (doc or "").splitlines():
        m = HEADER_LINE.fullmatch(line)
        if m:
            key = m.group(1)
            fields[key] = m.group(2).strip()
        elif key and line.strip():
            fields[key] = f"{fields[key]} {line.strip()}".strip()
        else:
            key = None
    return fields


def _classes(tree: ast.Module | None) -> set[str]:
    return {n.name for n in tree.body if isinstance(n, ast.ClassDef)} if tree else set()


def _model_named(tree: ast.Module | None) -> bool:
    """Whether a candidate is written in KernelBenchFiltered's style: its class is `Model`
    and no `ModelNew`. Its own file alone says so: no sibling's class decides how a
    candidate loads (one `ModelNew` in a run would fail every other one's `Model` as
    does_not_import: tests/fixtures/cross_candidate), and the store keys a verdict by the
    file's content alone."""
    classes = _classes(tree)
    return "Model" in classes and "ModelNew" not in classes


def run_folders(runs: Path) -> list[Path]:
    """`runs` itself when it holds kernels, else each sub-folder that does."""
    def holds_run(d: Path) -> bool:
        return (d / EVAL_RESULTS).is_file() or any(
            KERNEL_FILE.fullmatch(f.name) for f in d.glob("level_*_kernel.py")) or (
            LEVEL_DIR.fullmatch(d.name) is not None and any(d.glob("task_*.py")))
    if holds_run(runs):
        return [runs]
    return [d for d in sorted(runs.iterdir()) if d.is_dir() and holds_run(d)]


def _selected(config: RunConfig, level: int, pid: int, problem: Path | None) -> bool:
    if config.level is not None and level != config.level:
        return False
    if not config.problems:
        return True
    names = [str(pid)] + ([problem.stem] if problem else [])
    return any(fnmatch.fnmatchcase(n, pat) for pat in config.problems for n in names)


@dataclass
class _Candidate:
    path: Path
    level: int
    problem: int
    sample: int
    tree: ast.Module | None
    unreadable: str | None = None


def _run_cases(run: Path, problems: dict[tuple[int, int], Path],
               unreadable: dict[Path, str], config: RunConfig) -> list[Case]:
    results = RunResults()
    if os.path.lexists(run / EVAL_RESULTS):  # a FIFO or a device there is an error row
        results = read_eval_results(run / EVAL_RESULTS)
    found = []
    misnamed = []  # kernel-like names the layout cannot place: listed, not judged
    for f in run.glob("level_*_kernel.py"):
        m = KERNEL_FILE.fullmatch(f.name)
        if m:
            level, pid, sample = map(int, m.groups())
            found.append(_Candidate(f, level, pid, sample, *_parse(f)))
        else:
            misnamed.append(f)
    run_level = LEVEL_DIR.fullmatch(run.name)
    for f in run.glob("task_*.py") if run_level else ():
        m = TASK_FILE.fullmatch(f.name)
        if m:
            found.append(_Candidate(f, int(run_level.group(1)), int(m.group(1)), 0, *_parse(f)))
        else:
            misnamed.append(f)
    found.sort(key=lambda c: (c.level, c.problem, c.sample))
    cases: list[Case] = []
    for c in found:
        problem = problems.get((c.level, c.problem))
        if not _selected(config, c.level, c.problem, problem):
            continue
        stem = f"level_{c.level}_problem_{c.problem}_sample_{c.sample}"
        metadata: dict[str, Any] = {"run": run.name, "level": c.level, "problem_id": c.problem,
                                    "sample": c.sample,
                                    "problem": problem.stem if problem else None,
                                    **candidate_header(c.tree)}
        if _model_named(c.tree):
            metadata["entry_points"] = list(MODEL_NAMED_ENTRY)
        recorded = results.samples.get((c.problem, c.sample))
        error = c.unreadable or unreadable.get(problem) or (None if problem else (
            f"{c.path.name}: no problem {c.problem} in level {c.level} of the checkout"))
        cases.append(Case(id=f"{run.name}/{stem}", problem=problem or c.path,
                          candidate=c.path, bench=BENCH, metadata=metadata,
                          recorded_accept=recorded.accept if recorded else None,
                          discovery_error=error))
    if config.level is None and not config.problems:  # a name no selection can match
        cases += [Case(id=f"{run.name}/{f.stem}", problem=f, candidate=f, bench=BENCH,
                       metadata={"run": run.name},
                       discovery_error=f"{f}: not judged: not named as the layout names a "
                                       f"kernel (level_L_problem_P_sample_S_kernel.py, "
                                       f"task_P.py)") for f in sorted(misnamed)]
    if results.errors and cases:  # only when some of this run's kernels are selected
        path = run / EVAL_RESULTS
        more = f" (and {len(results.errors) - 1} more)" if len(results.errors) > 1 else ""
        cases.insert(0, Case(id=f"{run.name}/{EVAL_RESULTS}", problem=path, candidate=path,
                             bench=BENCH, metadata={"run": run.name},
                             discovery_error=results.errors[0] + more))
    return cases


def discover(config: RunConfig) -> list[Case]:
    root = config.root if config.root is not None else shipped_corpus()
    if not root.is_dir():
        raise DiscoveryError(f"{root}: no such directory")
    problems = problem_files(root)
    if not problems:
        raise DiscoveryError(f"{root}: no KernelBench problems (KernelBench/level*/N_Name.py)")
    runs = config.runs if config.runs is not None else root / "runs"
    if not runs.is_dir():
        raise DiscoveryError(f"{runs}: no runs folder" + ("" if config.runs else
                             " (pass --runs RUN_FOLDER)"))
    folders = run_folders(runs)
    if not folders:
        raise DiscoveryError(f"{runs}: no kernels (level_L_problem_P_sample_S_kernel.py)")
    unreadable = {p: why for p in problems.values() if (why := _read(p)[1])}
    return [case for run in folders for case in _run_cases(run, problems, unreadable, config)]


def shipped(case: Case) -> bool:
    """Whether the case's candidate is a file of the shipped corpus (links resolved): its
    header is kdiff's own word. In anyone else's run the header is the candidate's."""
    try:
        corpus = shipped_corpus().resolve()
    except DiscoveryError:
        return False
    return case.candidate.resolve().is_relative_to(corpus)


def not_judged_on(case: Case, device: str) -> str | None:
    """Why `device` does not judge the case, or None. Only a shipped kernel's header can say
    so (`requires: cuda`, or cpu: the one device where its defect shows); any other candidate
    is judged wherever it is run, whatever its docstring says."""
    requires = case.metadata.get("requires")
    if requires in (None, device) or not shipped(case):
        return None
    return f"not judged on {device}: the shipped kernel's header says `requires: {requires}`"


def runs_on(case: Case, device: str) -> bool:
    return not_judged_on(case, device) is None


def entry_points(case: Case) -> tuple[str, ...]:
    return tuple(case.metadata.get("entry_points") or DEFAULT_ENTRY)
