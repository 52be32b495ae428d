"""docs/signatures.md, rendered from the catalogue (kdiff.gates.registry): what each gate
checks, what each signature means, and the words of the failure explanations.

Regenerate with `python -m kdiff.reports.glossary > docs/signatures.md`; a test holds the file
equal to this rendering."""
from __future__ import annotations

from kdiff.gates.registry import ANY_GATE, GATES, SIGNATURES, TERMS


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("*", "\\*")


def render() -> str:
    lines = ["# Gates and signatures", "",
             "Generated from `gates/registry.py` by `python -m kdiff.reports.glossary`; "
             "`kdiff gates --verbose` prints the same.", "",
             "A failed gate carries a *signature*: one word for what the candidate did wrong. "
             "A verdict is `accept` when no gate failed, `REJECT` when one did, and `n/a` "
             "(undecided) when kdiff could not judge a gate; `--fail-on violation` counts "
             "undecided kernels unless `--undecided-ok` is given.", "",
             "## Gates", "", "| id | name | class | checks |", "|---|---|---|---|"]
    lines += [f"| {g.id} | {g.name} | {g.klass.value} | {_cell(g.summary)} |" for g in GATES]
    lines += ["", "## Signatures", "", "| signature | gates | meaning |", "|---|---|---|"]
    lines += [f"| `{s.name}` | {'any gate' if s.gates == (ANY_GATE,) else ', '.join(s.gates)} "
              f"| {_cell(s.meaning)} |" for s in SIGNATURES.values()]
    lines += ["", "## Words of the failure explanations", "", "| term | meaning |", "|---|---|"]
    lines += [f"| {_cell(term)} | {_cell(meaning)} |" for term, meaning in TERMS.items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render(), end="")
