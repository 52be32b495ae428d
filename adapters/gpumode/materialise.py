"""Each GPU MODE problem and submission as KernelBench-format files, so that the judge sees a
`Model` problem and a `ModelNew` candidate like any other case.

Per problem, in `<cache>/gpumode/problems/<id>-<hash>/`: the files task.yml gives the
harness's working directory, under the names it gives them (reference.py, task.py, utils.py;
not eval.py, which kdiff replaces), and problem.py:
  TESTS     task.yml's tests, in order: the native check runs each one as it stands;
  TEST      which test get_inputs() draws (0); KDIFF_VARIANTS select the others, so that
            CMP-03 judges every test configuration the benchmark runs as a held-out member;
  <sizes>   the integer arguments of the first test besides `seed` (`size`, `B`, `T`, ...),
            as module constants that CMP-03 and --max-elements scale;
  Model     `ref_kernel(data)`; get_inputs() `generate_input(**args)` with a fresh seed,
            flattened (kdiff.adapters.gpumode.data).
Per submission, in `<cache>/gpumode/candidates/<id>/<label>-<name>-<hash>/`: submission.py
(the submission as the harness names it) and candidate.py, `ModelNew` = its `custom_kernel`
called on a clone of `data` as the harness calls it, loaded with the problem's files as its
siblings.
"""
from __future__ import annotations

from pathlib import Path

from kdiff.adapters.gpumode.layout import Label, Problem, spec
from kdiff.data.cache import cache_key, slug, write_atomic
from kdiff.data.cache import cache_root as kdiff_cache_root

FORMAT = 2  # part of every cache key: bump when what is written here changes


def cache_root() -> Path:
    return kdiff_cache_root() / "gpumode"


def sizes(args: dict) -> dict[str, int]:
    """The integer arguments of a test that are sizes (the seed is drawn anew per trial)."""
    return {k: v for k, v in args.items()
            if k != "seed" and isinstance(v, int) and not isinstance(v, bool)}


def problem_folder(problem: Problem) -> Path:
    texts = [f"{name}\0{path.read_text(encoding='utf-8')}"
             for name, path in sorted(problem.files.items()) if name != "eval.py"]
    key = cache_key(FORMAT, problem.id, repr(problem.tests), *texts)
    return cache_root() / "problems" / f"{slug(problem.id)}-{key}"


def prepare_problem(problem: Problem) -> Path:
    """Writes the problem's folder (once per content) and returns its problem.py."""
    folder = problem_folder(problem)
    folder.mkdir(parents=True, exist_ok=True)
    for name, path in problem.files.items():
        if name != "eval.py":
            write_atomic(folder / name, path.read_text(encoding="utf-8"))
    write_atomic(folder / "problem.py", _problem_source(problem))
    return folder / "problem.py"


def _problem_source(problem: Problem) -> str:
    main = sizes(problem.tests[0])
    variants = {f"test {i}: {spec(args)}": {"TEST": i}
                for i, args in enumerate(problem.tests) if i}
    # get_inputs() must name every size constant (ProblemModule.size_constants reads its
    # code's names), and TEST only when there are variants: alone it would be taken for a size.
    override = "{" + ", ".join(f"{k!r}: {k}" for k in main) + "}"
    args = (f"TESTS[TEST] if TEST else {{**TESTS[0], **{override}}}" if variants
            else f"{{**TESTS[0], **{override}}}")
    lines = [
        f'"""GPU MODE {problem.id}: ref_kernel as a KernelBench problem.',
        "",
        f"Materialised by kdiff from {problem.folder}; the tests are task.yml's.\"\"\"",
        "from pathlib import Path",
        "",
        "from kdiff.adapters.gpumode import data",
        "",
        'REFERENCE = data.load_with_siblings(Path(__file__).with_name("reference.py"), '
        'Path(__file__).parent, "reference")',
        f"TESTS = {problem.tests!r}",
        *(["TEST = 0  # which of TESTS get_inputs() draws; KDIFF_VARIANTS select the others"]
          if variants else []),
        *(f"{k} = {v!r}" for k, v in main.items()),
    ]
    if variants:
        lines.append("KDIFF_VARIANTS = {")
        lines += [f"    {label!r}: {setting!r}," for label, setting in variants.items()]
        lines.append("}")
    lines += [
        "",
        "",
        "class Model(data.DataModel):",
        "    def __init__(self):",
        '        super().__init__(data.required(REFERENCE, "ref_kernel", REFERENCE.__file__))',
        "",
        "",
        "def get_inputs():",
        '    generate_input = data.required(REFERENCE, "generate_input", REFERENCE.__file__)',
        f"    return data.draw(generate_input, {args})",
        "",
        "",
        "def get_init_inputs():",
        "    return []",
        "",
    ]
    return "\n".join(lines)


def prepare_candidate(problem: Problem, problem_py: Path, submission: Path,
                      label: Label) -> Path:
    """Writes the submission's folder and returns its candidate.py."""
    text = submission.read_text(encoding="utf-8")
    key = cache_key(FORMAT, str(problem_py), text)
    folder = (cache_root() / "candidates" / slug(problem.id)
              / f"{label.value}-{slug(submission.stem)}-{key}")
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(folder / "submission.py", text)
    write_atomic(folder / "candidate.py", "\n".join([
        f'"""GPU MODE {problem.id}, {label.value}/{submission.name}: custom_kernel as '
        'ModelNew."""',
        "from pathlib import Path",
        "",
        "from kdiff.adapters.gpumode import data",
        "",
        'SUBMISSION = data.load_with_siblings(Path(__file__).with_name("submission.py"), '
        f'Path({str(problem_py.parent)!r}), "submission")',
        "",
        "",
        "class ModelNew(data.DataModel):",
        "    def __init__(self):",
        '        super().__init__(data.required(SUBMISSION, "custom_kernel", SUBMISSION.__file__),',
        "                         clone_data=True)",
        "",
    ]))
    return folder / "candidate.py"
