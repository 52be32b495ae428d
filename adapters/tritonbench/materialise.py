"""Each TritonBench case as KernelBench-format files, so that the judge sees a `Model` problem
and a `ModelNew` candidate like any other case.

Per gold file (shared by every generated answer to it), in
`<cache>/gold/<G|T>/<name>-<hash>-<device>/`:
  gold.py     the gold operator (the code section, with the test's imports: `layout.as_module`)
  test.py     the gold test section
  NAME.py     the gold file itself (the execution-accuracy reference run)
  calls.json     the test's calls of the gold functions, recorded in a child process
  replayed.json  the calls of the judged function the problem replays, the main one first
  problem.py     `Model` = the gold function
Per generated answer, in `<cache>/cases/<jsonl stem>-<hash>/<G|T>/<name>-<line>/`:
  NAME.py       the call-accuracy script: the answer (cleaned; G: reduced), the separator
                line, the gold test section
  generated.py  the answer as that script contains it, with the test's imports
  candidate.py  `ModelNew` = the generated function of the same name

The function judged is the first gold function the test calls (the T operator, the G
kernel's wrapper). Every gate judges its main call: of the recorded calls, the largest within
`MAX_ELEMENTS` tensor elements (else the smallest), since CPU runs go through Triton's
interpreter. The test's other calls of it (other shapes, other arguments: `dim=1`,
`approximate='tanh'`) are the problem's variants, which CMP-03 judges as held-out members of
its class: the benchmark's check runs all of them. Calls that pass `out=` are passed over when
the test makes any other; calls that differ only in their floating values are replayed once.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from kdiff.adapters.tritonbench import calls as callmod
from kdiff.adapters.tritonbench.layout import GoldFile, as_module, call_script
from kdiff.adapters.tritonbench.runner import record_calls
from kdiff.data.cache import cache_key, write_atomic
from kdiff.data.cache import cache_root as kdiff_cache_root
from kdiff.data.code import code_digest
from kdiff.sandbox.process import SandboxLimits

FORMAT = 3  # part of every cache key: bump when what is written here changes

# Tensor elements of the replayed call: the shipped corpus keeps a CPU case to a few
# thousand elements, since every gate runs it many times through the Triton interpreter.
MAX_ELEMENTS = 8192
# The dtypes PRC-01 can judge besides float32 (kdiff.judging.context.DTYPES).
_HALF_DTYPES = ("float16", "bfloat16")


def cache_root() -> Path:
    """The adapter's folder of kdiff's cache (kdiff.data.cache)."""
    return kdiff_cache_root() / "tritonbench"


@dataclass
class GoldCase:
    gold: GoldFile
    folder: Path
    target: str | None = None
    call_index: int | None = None  # the main call's index among the recorded calls
    calls_recorded: int = 0
    error: str | None = None  # why the gold cannot be judged here

    @property
    def problem(self) -> Path:
        return self.folder / "problem.py"

    @property
    def script(self) -> Path:
        return self.folder / self.gold.path.name


def _elements(call: dict) -> int:
    return sum(math.prod(s["shape"]) for s in callmod.call_specs(call))


def replayable(calls: list[dict], target: str) -> list[int]:
    """The indices of the recorded calls of `target` that can be replayed, one per template
    (calls that differ only in their floating values are one)."""
    usable = [i for i, c in enumerate(calls) if c["function"] == target and "args" in c]
    # A call with `out=` has the function write into a tensor the caller passed: an output by
    # contract, which ORD-02 and RES-01 would read as an input aliased and overwritten
    # (TritonBench's `sub` and `sqrt_exp`). Such a call is replayed only when it is the only one.
    usable = [i for i in usable if "out" not in calls[i].get("kwargs", {})] or usable
    first: dict[str, int] = {}
    for i in usable:
        first.setdefault(callmod.template_key(calls[i]), i)
    return list(first.values())


def choose_call(calls: list[dict], target: str) -> int | None:
    """The main call: the largest replayable one within MAX_ELEMENTS, else the smallest."""
    usable = replayable(calls, target)
    if not usable:
        return None
    within = [i for i in usable if _elements(calls[i]) <= MAX_ELEMENTS]
    if within:
        return max(within, key=lambda i: _elements(calls[i]))
    return min(usable, key=lambda i: _elements(calls[i]))


def recording_code() -> str:
    """The code a gold folder's recording (calls.json, kept across runs) is made by: this
    module and what it imports. Part of the folder's key, so that a changed recorder records
    again (a symmetric matrix's `matrix` mark was missing from recordings kept from before it
    existed)."""
    return code_digest(__name__)


def prepare_gold(gold: GoldFile, device: str, limits: SandboxLimits) -> GoldCase:
    text = gold.path.read_text(encoding="utf-8")
    folder = (cache_root() / "gold" / gold.variant
              / f"{gold.name}-{cache_key(FORMAT, recording_code(), text)}-{device}")
    folder.mkdir(parents=True, exist_ok=True)
    case = GoldCase(gold, folder)
    write_atomic(folder / "gold.py", as_module(gold.code, gold))
    write_atomic(folder / "test.py", gold.test)
    write_atomic(case.script, text)
    recorded = folder / "calls.json"
    if not recorded.is_file():
        result = record_calls(folder / "gold.py", folder / "test.py", recorded, device, limits)
        if not recorded.is_file():  # a child that ended without writing one, whatever its status
            case.error = f"the gold test could not be recorded: {result.failure()}"
            return case
    try:
        data = json.loads(recorded.read_text())
        status, calls = data["status"], data["calls"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        case.error = f"the gold test's recording does not read: {type(exc).__name__}: {exc}"
        return case
    if status != "ok":
        case.error = f"the gold test does not run on {device}: {status.splitlines()[-1]}"
        return case
    case.calls_recorded = len(calls)
    if not calls:
        case.error = "the gold test calls no function of the gold code by name"
        return case
    case.target = calls[0]["function"]
    case.call_index = choose_call(calls, case.target)
    if case.call_index is None:
        why = {c.get("unrecordable") for c in calls if c["function"] == case.target}
        case.error = (f"no call of `{case.target}` can be replayed: "
                      f"{', '.join(sorted(w for w in why if w))}")
        return case
    others = [i for i in replayable(calls, case.target) if i != case.call_index]
    replayed = [case.call_index, *others]
    write_atomic(folder / "replayed.json", json.dumps([calls[i] for i in replayed]))
    variants = {f"recorded call {i}: {callmod.describe(calls[i])}": {"CALL": k}
                for k, i in enumerate(replayed) if k}
    write_atomic(case.problem, _problem_source(case, calls[case.call_index], variants))
    return case


def _problem_source(case: GoldCase, call: dict, variants: dict[str, dict[str, int]]) -> str:
    dims = callmod.dims(call)
    halves = sorted({s["dtype"] for s in callmod.call_specs(call)} & set(_HALF_DTYPES))
    lines = [
        f'"""TritonBench-{case.gold.variant} {case.gold.name}: the gold `{case.target}` as a '
        "KernelBench problem.",
        "",
        f"Materialised by kdiff from {case.gold.path}; the inputs replay call "
        f"{case.call_index} of the {case.calls_recorded} calls",
        "its test makes (calls.json), with fresh values; the variants, its other calls of",
        f'`{case.target}`."""',
        "import json",
        "from pathlib import Path",
        "",
        "from kdiff.adapters.tritonbench import calls",
        "",
        "HERE = Path(__file__).parent",
        'CALLS = json.loads((HERE / "replayed.json").read_text())',
        "CALL = 0  # which of CALLS get_inputs() draws for and the models replay",
        f'FUNCTION = calls.load_function(HERE / "gold.py", {case.target!r}, "problem")',
        *(f"DIM_{d} = {d}" for d in dims),
    ]
    if halves:
        lines.append(f"KDIFF_DTYPES = {tuple(halves)!r}")
    if variants:
        lines.append("KDIFF_VARIANTS = {")
        lines += [f"    {label!r}: {setting!r}," for label, setting in variants.items()]
        lines.append("}")
    sizes = ", ".join(f'"DIM_{d}": DIM_{d}' for d in dims)
    lines += [
        "",
        "",
        "class Model(calls.FunctionModel):",
        "    def __init__(self, call=0):",
        "        super().__init__(FUNCTION, CALLS[call])",
        "",
        "",
        "def get_inputs():",
        f"    return calls.make_inputs(CALLS[CALL], {{{sizes}}})",
        "",
        "",
        "def get_init_inputs():",
        "    return [CALL]",
        "",
    ]
    return "\n".join(lines)


@dataclass
class CandidateCase:
    folder: Path

    @property
    def candidate(self) -> Path:
        return self.folder / "candidate.py"


def case_folder(jsonl: Path, variant: str, name: str, line: int) -> Path:
    key = cache_key(FORMAT, str(jsonl.resolve()), jsonl.read_text(encoding="utf-8"))
    return cache_root() / "cases" / f"{jsonl.stem}-{key}" / variant / f"{name}-{line}"


def prepare_candidate(gold: GoldCase, code: str, folder: Path, origin: str) -> CandidateCase:
    """Writes the generated answer, its call-accuracy script and (where the gold could be
    recorded) its `ModelNew`."""
    folder.mkdir(parents=True, exist_ok=True)
    case = CandidateCase(folder)
    write_atomic(folder / "generated.py", as_module(code, gold.gold))
    write_atomic(folder / gold.gold.path.name, call_script(code, gold.gold))
    if gold.target is not None:
        write_atomic(case.candidate, "\n".join([
            f'"""TritonBench-{gold.gold.variant} {gold.gold.name}, {origin}: the generated '
            f'`{gold.target}` as ModelNew."""',
            "import json",
            "from pathlib import Path",
            "",
            "from kdiff.adapters.tritonbench import calls",
            "",
            f"CALLS = json.loads(Path({str(gold.folder / 'replayed.json')!r}).read_text())",
            f"FUNCTION = calls.load_function(Path(__file__).with_name(\"generated.py\"), "
            f"{gold.target!r}, \"candidate\")",
            "",
            "",
            "class ModelNew(calls.FunctionModel):",
            "    def __init__(self, call=0):",
            "        super().__init__(FUNCTION, CALLS[call])",
            "",
        ]))
    return case
