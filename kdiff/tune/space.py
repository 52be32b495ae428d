"""A kernel's launch space, declared by the candidate and read without running it.

A candidate file declares, as module-level literals:
    KDIFF_TUNE_SPACE = {"BLOCK": [16, 32, 64], "num_warps": [2, 4, 8], "ACC_FP16": [False, True]}
    KDIFF_TUNE_CONFIG = {"BLOCK": 32, "num_warps": 4, "ACC_FP16": False}   # the default
    KDIFF_TUNE_EXCLUDE = [{"BLOCK": 64, "num_warps": 2}]                  # optional
and reads its launch settings from KDIFF_TUNE_CONFIG at call time. The space is read with
`ast.literal_eval` (a candidate is hostile: the judge never imports it), and a configuration
is applied by writing a copy of the file with KDIFF_TUNE_CONFIG assigned again at its end
(configured_source), so each configuration is judged as a candidate file of its own.
"""
from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

# Settings Triton's launcher takes, not the kernel: the interpreter ignores them, so on the
# CPU they cannot change an output (judge.py shares a verdict across them there).
LAUNCH_OPTIONS = frozenset({"num_warps", "num_stages", "num_ctas", "maxnreg"})

Choice = Any  # a literal: int, float, bool, str or None
Config = tuple[tuple[str, Choice], ...]  # (knob, choice) in the space's knob order


class SpaceError(ValueError):
    """A launch space that is missing, not a literal, or inconsistent."""


@dataclass(frozen=True)
class Knob:
    name: str
    choices: tuple[Choice, ...]

    @property
    def launch_option(self) -> bool:
        return self.name in LAUNCH_OPTIONS


@dataclass
class Space:
    knobs: list[Knob]
    default: Config
    exclude: list[dict[str, Choice]] = field(default_factory=list)

    def __post_init__(self) -> None:
        names = [k.name for k in self.knobs]
        if not self.knobs or any(not k.choices for k in self.knobs):
            raise SpaceError("a launch space needs knobs, each with at least one choice")
        for k in self.knobs:
            if len(set(map(repr, k.choices))) != len(k.choices):
                raise SpaceError(f"knob {k.name}: repeated choices")
        for rule in self.exclude:
            if not set(rule) <= set(names):
                raise SpaceError(f"KDIFF_TUNE_EXCLUDE names unknown knobs: {sorted(rule)}")
        self.validate(self.default)
        if not self.allowed(self.default):
            raise SpaceError("the default configuration is excluded by KDIFF_TUNE_EXCLUDE")

    def validate(self, config: Config) -> None:
        values = dict(config)
        for k in self.knobs:
            if k.name not in values:
                raise SpaceError(f"configuration sets no value for knob {k.name}")
            if values[k.name] not in k.choices:
                raise SpaceError(f"knob {k.name}: {values[k.name]!r} is not one of {k.choices}")
        unknown = set(values) - {k.name for k in self.knobs}
        if unknown:
            raise SpaceError(f"configuration sets unknown knobs: {sorted(unknown)}")

    def allowed(self, config: Config) -> bool:
        values = dict(config)
        return not any(all(values[n] == v for n, v in rule.items()) for rule in self.exclude)

    def __iter__(self) -> Iterator[Config]:
        """Every allowed configuration, the first knob slowest (a Triton configs list's order)."""
        for choices in itertools.product(*(k.choices for k in self.knobs)):
            config = tuple(zip((k.name for k in self.knobs), choices))
            if self.allowed(config):
                yield config

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def index(self, config: Config) -> tuple[int, ...]:
        return tuple(k.choices.index(v) for k, (_, v) in zip(self.knobs, config))


def _literals(source: str, path: Path) -> dict[str, Any]:
    """The module-level KDIFF_TUNE_* assignments of a source, as literals (last one wins)."""
    try:
        tree = ast.parse(source, str(path))
    except SyntaxError as exc:
        raise SpaceError(f"{path}: syntax error: {exc.msg} (line {exc.lineno})") from None
    found: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id.startswith("KDIFF_TUNE_"):
            try:
                found[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                raise SpaceError(f"{path}: {node.targets[0].id} is not a literal "
                                 f"(line {node.lineno})") from None
    return found


def read_space(path: Path) -> Space:
    found = _literals(Path(path).read_text(), Path(path))
    if "KDIFF_TUNE_SPACE" not in found:
        raise SpaceError(f"{path}: declares no KDIFF_TUNE_SPACE")
    raw = found["KDIFF_TUNE_SPACE"]
    if not isinstance(raw, dict) or not all(isinstance(v, (list, tuple)) for v in raw.values()):
        raise SpaceError(f"{path}: KDIFF_TUNE_SPACE must map knob names to lists of choices")
    knobs = [Knob(str(name), tuple(choices)) for name, choices in raw.items()]
    default = found.get("KDIFF_TUNE_CONFIG")
    if not isinstance(default, dict):
        raise SpaceError(f"{path}: declares no KDIFF_TUNE_CONFIG dict (the default "
                         "configuration, which the kernel reads its settings from)")
    exclude = found.get("KDIFF_TUNE_EXCLUDE", [])
    if not isinstance(exclude, list) or not all(isinstance(r, dict) for r in exclude):
        raise SpaceError(f"{path}: KDIFF_TUNE_EXCLUDE must be a list of dicts")
    missing = [k.name for k in knobs if k.name not in default]
    if missing:
        raise SpaceError(f"{path}: KDIFF_TUNE_CONFIG sets no value for {', '.join(missing)}")
    return Space(knobs, tuple((k.name, default[k.name]) for k in knobs), exclude)


def configured_source(source: str, config: Config) -> str:
    """The candidate's source with KDIFF_TUNE_CONFIG set to `config` after everything else."""
    return f"{source.rstrip()}\n\n\nKDIFF_TUNE_CONFIG = {dict(config)!r}  # kdiff tune\n"


def describe(config: Config) -> str:
    return " ".join(f"{name}={value}" for name, value in config)
