"""The plugin manager: adapters found through the `kdiff.adapters` entry point group."""
from __future__ import annotations

import functools
import sys
from importlib.metadata import entry_points

import pluggy

from kdiff.judging import hookspecs


class UnknownBench(KeyError):
    pass


@functools.lru_cache(maxsize=1)
def manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager("kdiff")
    pm.add_hookspecs(hookspecs)
    for ep in entry_points(group="kdiff.adapters"):
        if pm.get_plugin(ep.name) is not None:
            continue
        try:
            pm.register(ep.load(), name=ep.name)
        except Exception as exc:  # noqa: BLE001 - one broken adapter must not stop the rest
            print(f"kdiff: warning: adapter '{ep.name}' ({ep.value}) does not load: "
                  f"{type(exc).__name__}: {exc}", file=sys.stderr)
    return pm


def benches(pm: pluggy.PluginManager | None = None) -> dict[str, str]:
    pm = pm or manager()
    return {name: desc for found in pm.hook.kdiff_benches() for name, desc in found}


def require_bench(name: str, pm: pluggy.PluginManager | None = None) -> None:
    known = benches(pm)
    if name not in known:
        listing = ", ".join(sorted(known)) or "none"
        raise UnknownBench(f"unknown bench '{name}'; installed adapters: {listing}")
