"""The code a verdict depends on, as a digest: what the results store keys verdicts by, so
that a fix to one gate re-judges only that gate's results, and a fix to a native check or to
the code every gate shares re-judges everything it touches.

A module's code is its import closure (kdiff.data.code), together with the packages it starts
or loads by name rather than imports: the sandbox (the worker runs every call in a process of
its own) and, for the case itself, the bench's adapter (found through its plugin entry)."""
from __future__ import annotations

import functools

from kdiff.data.code import code_digest, package_modules

# Packages loaded by name, not imported: the worker's process runs `kdiff.sandbox` modules.
LOADED_BY_NAME = ("kdiff.sandbox",)
# The case's own judgement (discovery, the native check, the judging loop): the driver.
CASE_ROOT = "kdiff.verdicts.judge"


def _with_loaded(*roots: str) -> tuple[str, ...]:
    return tuple(sorted({*roots, *(m for p in LOADED_BY_NAME for m in package_modules(p))}))


@functools.lru_cache(maxsize=None)
def gate_code(gate_id: str) -> str:
    """The digest of the code one gate's result depends on."""
    from kdiff.gates.registry import entry
    return code_digest(*_with_loaded(f"kdiff.gates.{entry(gate_id).module}"))


@functools.lru_cache(maxsize=None)
def case_code(bench: str) -> str:
    """The digest of the code a case's verdict besides its gates depends on: the judging loop,
    the sandbox and the bench's adapter (kdiff's own adapters; a third-party adapter's code
    is not kdiff's to hash)."""
    return code_digest(*_with_loaded(CASE_ROOT, *sorted(package_modules(
        f"kdiff.adapters.{bench}"))))
