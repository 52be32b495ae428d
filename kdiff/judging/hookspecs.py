"""The adapter hook specifications: how a benchmark harness plugs into kdiff.

An adapter is a module (or object) implementing some of these hooks, registered under the
entry point group `kdiff.adapters`, the way pytest finds its plugins. Every adapter sees every
call; the one whose bench name matches answers, the others return None (`firstresult`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from pathlib import Path

    from kdiff.data.model import Case, NativeVerdict
    from kdiff.data.stream import CaseStream
    from kdiff.judging.context import GateContext
    from kdiff.judging.runconfig import RunConfig

hookspec = pluggy.HookspecMarker("kdiff")
hookimpl = pluggy.HookimplMarker("kdiff")


@hookspec
def kdiff_benches() -> list[tuple[str, str]]:
    """(name, one-line description) of each bench this adapter serves."""


@hookspec(firstresult=True)
def kdiff_native_presets(bench: str) -> list[str] | None:
    """The names of the native-check presets of `bench`, the default first."""


class DiscoveryError(Exception):
    """Raised by `kdiff_discover` when the run's input cannot be read at all (a missing or
    empty root or runs folder): one line, exit status 2. Anything narrower (one broken file)
    is a case with `discovery_error` instead."""


@hookspec(firstresult=True)
def kdiff_default_preset(bench: str, config: "RunConfig") -> str | None:
    """The preset to use when the user names none, if it depends on what is judged (the
    first of kdiff_native_presets otherwise)."""


@hookspec(firstresult=True)
def kdiff_discover(bench: str, config: "RunConfig") -> "list[Case] | CaseStream | None":
    """The cases of `bench` under the run's options (root, runs, filters): a list, or a
    CaseStream whose cases become ready over time (judging starts with the first). A case
    whose files are broken is still returned, with `discovery_error` set: it gets its own
    error row. Raise `DiscoveryError` when there is nothing readable to discover from."""


@hookspec(firstresult=True)
def kdiff_not_judged_on(bench: str, case: "Case", device: str) -> str | None:
    """Why `device` does not judge `case` (a kernel whose defect shows on one device only),
    or None. Discovery lists such a case as an error row saying this."""


@hookspec(firstresult=True)
def kdiff_problem_files(bench: str, root: "Path | None") -> "dict[tuple[int, int], Path] | None":
    """(level, problem id) -> problem file, of the checkout at `root` (None: the shipped
    corpus)."""


@hookspec(firstresult=True)
def kdiff_native_check(bench: str, case: "Case", ctx: "GateContext", preset: str
                       ) -> "NativeVerdict | None":
    """Run the harness's own correctness check on one case."""


@hookspec(firstresult=True)
def kdiff_entry_points(bench: str, case: "Case") -> tuple[str, ...] | None:
    """Class names to look for in the candidate file; none answering means `ModelNew`."""


@hookspec(firstresult=True)
def kdiff_case_from_paths(bench: str, problem: "Path", candidate: "Path") -> "Case | None":
    """The case `kdiff verify --bench BENCH --problem P --candidate C` judges, for a bench
    whose files are not KernelBench-format themselves (a problem folder, a solution json):
    materialised as the bench's discovery would. None: P and C are judged as they are."""


def describe(hook: Any) -> str:
    return hook.__doc__ or ""


@hookspec(firstresult=True)
def kdiff_describe_preset(bench: str, preset: str) -> str | None:
    """One line saying what the preset checks and with which tolerance, shown beside its name
    wherever a run or a report names it (docs/benches.md has the long form)."""
