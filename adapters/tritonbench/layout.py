"""TritonBench's files, as its evaluation scripts read them (thunlp/TritonBench at 603e28a,
`EVAL/eval_G/0_call_acc.py`, `EVAL/eval_T/0_call_acc.py`).

- A gold file `data/TritonBench_{G,T}_v1/NAME.py` is the operator's code, a line of 146 '#'
  characters, and the test section (what follows the last such line; it defines `test_*`
  functions and calls them at module level).
- The statistics file `data/TritonBench_G_v1.json` (`data/TritonBench_T_v1.json`, shipped as
  `TritonBench_T_v1.jsonl` holding one JSON list) lists one item per gold file: `file`, and the
  gold code (`output`, G) or the functional description (`description`, T).
- A generated-output file is JSON lines: the instruction (its first key, `instruction` or
  `prompt`), `predict` (the model's answer) and `label` (the gold code for G, empty for T).
  A G row is matched to the first unclaimed gold item whose code contains its label; a T row
  to the one item whose description contains the instruction's functional description.
- The script that is run: the answer cleaned (the text after the last "```python" fence, chat
  end tokens removed; for G, further reduced to its imports and function definitions), a
  separator line, and the gold test section.
"""
from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path

from kdiff.data.files import MAX_SOURCE_BYTES, UnreadableFile, read_regular_file

SEPARATOR = "#" * 146
# A statistics or generated-output file: one item per TritonBench operator (184 G, 166 T),
# each a model's answer or the gold code of tens of KB: some 20 MB at most; no more than
# 128 MiB is read (its JSON takes a few GB to load).
MAX_DATA_BYTES = 128 << 20
_END_TOKENS = ("<|im_end|>", "<|EOT|>")


class LayoutError(Exception):
    """A TritonBench file that cannot be read as its scripts read it (one line)."""


def _read_text(path: Path, limit: int) -> str:
    """The file's text, if it is a regular file of at most `limit` bytes (kdiff.data.files)."""
    try:
        return read_regular_file(path, limit).decode("utf-8")
    except (UnreadableFile, UnicodeDecodeError) as exc:
        raise LayoutError(str(exc) if isinstance(exc, UnreadableFile)
                          else f"{path}: not UTF-8: {exc}") from None


@dataclass(frozen=True)
class GoldFile:
    variant: str
    path: Path
    code: str  # the operator: everything before the last separator line
    test: str  # the test section: everything after it

    @property
    def name(self) -> str:
        return self.path.stem


@dataclass(frozen=True)
class GeneratedRow:
    source: Path  # the jsonl file
    line: int  # 1-based
    variant: str
    instruction: str
    predict: str
    label: str


def data_dir(root: Path) -> Path:
    """`root` is a TritonBench checkout (with `data/`) or its `data/` folder itself."""
    return root / "data" if (root / "data").is_dir() else root


def gold_folder(root: Path, variant: str) -> Path:
    return data_dir(root) / f"TritonBench_{variant}_v1"


def read_gold(path: Path, variant: str) -> GoldFile:
    text = _read_text(path, MAX_SOURCE_BYTES)
    code, sep, test = text.rpartition(SEPARATOR)
    if not sep:
        raise LayoutError(f"{path}: no separator line of 146 '#' characters")
    if "def test_" not in test:
        raise LayoutError(f"{path}: the test section defines no `test_*` function")
    return GoldFile(variant, path, code, test)


def read_statistics(root: Path, variant: str) -> list[dict]:
    base = data_dir(root) / f"TritonBench_{variant}_v1"
    for path in (base.with_suffix(".json"), base.with_suffix(".jsonl")):
        if not path.is_file():
            continue
        text = _read_text(path, MAX_DATA_BYTES)
        try:
            items = json.loads(text)
        except json.JSONDecodeError:
            try:
                items = [json.loads(line) for line in text.splitlines() if line.strip()]
            except json.JSONDecodeError as exc:
                raise LayoutError(f"{path}: not JSON: {exc}") from None
        if not isinstance(items, list) or not all(isinstance(i, dict) and "file" in i
                                                  for i in items):
            raise LayoutError(f"{path}: expected a list of objects with a `file` key")
        return items
    raise LayoutError(f"{base}.json: statistics file not found")


def read_generated(path: Path) -> list[GeneratedRow]:
    """The rows of one generated-output file; it answers G when its rows carry gold labels
    (upstream runs a file through one variant's script)."""
    items = []
    for n, line in enumerate(_read_text(path, MAX_DATA_BYTES).splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise LayoutError(f"{path}:{n}: not JSON: {exc}") from None
        if not isinstance(item, dict) or "predict" not in item:
            raise LayoutError(f"{path}:{n}: expected an object with a `predict` key")
        items.append((n, item))
    variant = "G" if any(item.get("label") for _, item in items) else "T"
    return [GeneratedRow(path, n, variant, str(next(iter(item.values()))),  # the first key
                         str(item["predict"]), str(item.get("label") or ""))
            for n, item in items]


def _strip_end_tokens(text: str) -> str:
    for token in _END_TOKENS:
        text = text.replace(token, "")
    return text


def functional_description(instruction: str) -> str:
    return (instruction.split("Functional Description: ")[-1]
            .split("Wrapper Entry Information:")[0].replace("\n", ""))


def match_files(rows: list[GeneratedRow], stats: list[dict]) -> list[str | LayoutError]:
    """The gold file of each row (or why there is none), as the upstream scripts pair them."""
    out: list[str | LayoutError] = []
    pool = list(stats)
    for row in rows:
        if row.variant == "G":
            label = _strip_end_tokens(row.label)
            hit = next((item for item in pool if label in str(item.get("output", ""))), None)
            if hit is not None:
                pool.remove(hit)
                out.append(hit["file"])
            else:
                out.append(LayoutError(f"{row.source}:{row.line}: its label is in no gold "
                                       "item's code"))
        else:
            func = functional_description(row.instruction)
            hits = [item["file"] for item in stats
                    if func in str(item.get("description", "")).replace("\n", "")]
            out.append(hits[0] if len(hits) == 1 else LayoutError(
                f"{row.source}:{row.line}: its functional description matches {len(hits)} "
                "gold items, not one"))
    # Upstream pairs its one G label that matches no gold code (the gold file was edited
    # after the outputs were generated) with the one gold item left over; the general form
    # of that rule: exactly one row and one item left unpaired belong together.
    unpaired = [i for i, f in enumerate(out) if isinstance(f, LayoutError)]
    if len(unpaired) == 1 and rows[unpaired[0]].variant == "G" and len(pool) == 1:
        out[unpaired[0]] = pool[0]["file"]
    return out


def clear_code(predict: str) -> str:
    """The answer's code: the text after its last "```python" fence, end tokens removed
    (a closing fence stays, as upstream leaves it)."""
    if "```python" in predict:
        predict = _strip_end_tokens(predict.split("```python")[-1])
    return predict


def reduce_to_definitions(code: str) -> str:
    """G only: the import statements, then the function definitions, each in `ast.walk`
    order (so nested functions and methods too, lifted to the top level); classes and
    module-level statements are dropped. Code that does not parse is kept as it is."""
    try:
        tree = ast.parse(code)
    except Exception:  # noqa: BLE001 - upstream keeps any code it cannot parse
        return code
    imports, functions = [], []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.append(ast.unparse(node))
        elif isinstance(node, ast.FunctionDef):
            functions.append(ast.unparse(node))
    return "\n".join(imports) + "\n\n" + "\n".join(functions)


def candidate_code(row: GeneratedRow) -> str:
    """The generated code as the call-accuracy script contains it."""
    code = clear_code(row.predict)
    return reduce_to_definitions(code) if row.variant == "G" else code


def as_module(code: str, gold: GoldFile) -> str:
    """Code to import on its own, as the script runs it: the script's one namespace also
    holds the names the gold test section imports (a function body may use `torch` that only
    the test imported), so those imports are appended."""
    try:
        tree = ast.parse(gold.test)
    except SyntaxError:
        return code
    imports = [ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    return code + "\n\n# The gold test section's imports (the script's namespace has them)\n" \
        + "\n".join(imports) + "\n"


def call_script(code: str, gold: GoldFile) -> str:
    return code + "\n" + SEPARATOR + "\n" + gold.test
