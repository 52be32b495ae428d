"""Each SOL-ExecBench definition and solution as KernelBench-format files.

Per definition, in `<cache>/solexecbench/problems/<name>-<hash>/`: definition.json,
workload.jsonl, reference.py (the definition's `reference` code, which is what upstream runs)
and problem.py:
  WORKLOADS  the workloads, in order: the native check runs each one;
  WORKLOAD   which workload get_inputs() draws (0); KDIFF_VARIANTS select the others, so that
             CMP-03 judges every workload configuration as a held-out member;
  <axes>     the first workload's var axes, module constants CMP-03 and --max-elements scale
             (const axes are part of the definition's contract and stay);
  KDIFF_DTYPES  the half-precision dtypes the definition's inputs use (PRC-01 judges them);
  Model      `run(*inputs)`, its outputs in the definition's order.
Per solution, in `<cache>/solexecbench/candidates/<name>/<file>-<hash>/`: its sources under
`src/` and candidate.py, `ModelNew` = the entry point in its calling convention.
"""
from __future__ import annotations

from pathlib import Path

from kdiff.adapters.solexecbench.layout import (
    Definition,
    LayoutError,
    Solution,
    Workload,
    parse_workloads,
)
from kdiff.data.cache import cache_key, slug, write_atomic
from kdiff.data.cache import cache_root as kdiff_cache_root

FORMAT = 1  # part of every cache key: bump when what is written here changes
RESERVED = frozenset({"HERE", "DEFINITION", "WORKLOADS", "WORKLOAD", "REFERENCE", "Model",
                      "get_inputs", "get_init_inputs", "KDIFF_VARIANTS", "KDIFF_DTYPES",
                      "Path", "layout", "runtime", "load_module", "replace"})
_HALVES = ("float16", "bfloat16")


def cache_root() -> Path:
    return kdiff_cache_root() / "solexecbench"


def prepare_problem(definition: Definition, folder: Path) -> Path:
    """Writes the definition's folder and returns its problem.py. `folder` holds
    definition.json and workload.jsonl."""
    definition_text = (folder / "definition.json").read_text(encoding="utf-8")
    workloads_text = (folder / "workload.jsonl").read_text(encoding="utf-8")
    bad = [a for a in definition.var_axes if not a.isidentifier() or a in RESERVED]
    if bad:
        raise LayoutError(f"{folder}: var axis name(s) kdiff cannot carry: {bad}")
    out = (cache_root() / "problems"
           / f"{slug(definition.name)}-{cache_key(FORMAT, definition_text, workloads_text)}")
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / "definition.json", definition_text)
    write_atomic(out / "workload.jsonl", workloads_text)
    write_atomic(out / "reference.py", definition.reference)
    write_atomic(out / "problem.py", _problem_source(
        definition, parse_workloads(workloads_text, folder / "workload.jsonl")))
    return out / "problem.py"


def _problem_source(definition: Definition, workloads: list[Workload]) -> str:
    main = {a: workloads[0].axes[a] for a in definition.var_axes if a in workloads[0].axes}
    variants = {f"workload {i} ({w.uuid}): {w.axes}": {"WORKLOAD": i}
                for i, w in enumerate(workloads) if i}
    halves = sorted({s.dtype for s in definition.inputs} & set(_HALVES))
    override = "{" + ", ".join(f"{a!r}: {a}" for a in main) + "}"
    chosen = "replace(WORKLOADS[0], axes={**WORKLOADS[0].axes, **" + override + "})"
    if variants:
        chosen = f"WORKLOADS[WORKLOAD] if WORKLOAD else {chosen}"
    custom = definition.custom_inputs_entrypoint  # an identifier (upstream validates it)
    lines = [
        f'"""SOL-ExecBench {definition.name}: the definition\'s run as a KernelBench problem.',
        "",
        'Materialised by kdiff; the workloads are workload.jsonl\'s."""',
        "from dataclasses import replace",
        "from pathlib import Path",
        "",
        "from kdiff.adapters.solexecbench import layout, runtime",
        "from kdiff.data.problem import load_module",
        "",
        "HERE = Path(__file__).parent",
        'DEFINITION = layout.read_definition(HERE / "definition.json")',
        'WORKLOADS = layout.read_workloads(HERE / "workload.jsonl")',
        'REFERENCE = load_module(HERE / "reference.py", "reference")',
        *(["WORKLOAD = 0  # which of WORKLOADS get_inputs() draws; KDIFF_VARIANTS select "
           "the others"] if variants else []),
        *(f"{a} = {v!r}" for a, v in main.items()),
    ]
    if halves:
        lines.append(f"KDIFF_DTYPES = {tuple(halves)!r}")
    if variants:
        lines.append("KDIFF_VARIANTS = {")
        lines += [f"    {label!r}: {setting!r}," for label, setting in variants.items()]
        lines.append("}")
    lines += [
        "",
        "",
        "class Model(runtime.ReferenceModel):",
        "    def __init__(self):",
        "        super().__init__(DEFINITION, REFERENCE.run)",
        "",
        "",
        "def get_inputs():",
        f"    return runtime.make_inputs(DEFINITION, {chosen}, \"cpu\", "
        f"{f'REFERENCE.{custom}' if custom else 'None'})",
        "",
        "",
        "def get_init_inputs():",
        "    return []",
        "",
    ]
    return "\n".join(lines)


def prepare_candidate(definition: Definition, problem_py: Path, solution: Solution) -> Path:
    """Writes the solution's sources and its candidate.py, and returns the latter."""
    key = cache_key(FORMAT, str(problem_py), *(f"{p}\0{c}" for p, c in sorted(solution.sources.items())))
    folder = (cache_root() / "candidates" / slug(definition.name)
              / f"{slug(solution.path.stem)}-{key}")
    for rel, content in solution.sources.items():
        (folder / "src" / rel).parent.mkdir(parents=True, exist_ok=True)
        write_atomic(folder / "src" / rel, content)
    entry = folder / "src" / solution.entry_file
    write_atomic(folder / "candidate.py", "\n".join([
        f'"""SOL-ExecBench {definition.name}, {solution.path.name}: '
        f'{solution.entry_file}::{solution.entry_function} as ModelNew."""',
        "from pathlib import Path",
        "",
        "from kdiff.adapters.gpumode.data import load_with_siblings",
        "from kdiff.adapters.solexecbench import layout, runtime",
        "",
        f"DEFINITION = layout.read_definition(Path({str(problem_py.parent / 'definition.json')!r}))",
        f"ENTRY = load_with_siblings(Path({str(entry)!r}), Path({str(entry.parent)!r}), "
        '"solution")',
        "",
        "",
        "class ModelNew(runtime.SolutionModel):",
        "    def __init__(self):",
        f"        super().__init__(DEFINITION, ENTRY.{solution.entry_function}, "
        f"{solution.destination_passing_style!r})",
        "",
    ]))
    return folder / "candidate.py"
