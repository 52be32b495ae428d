"""Shared by the benchmark scripts: the machine they ran on, and their section of
benchmarks/RESULTS.md (each script owns the text between its own markers)."""
from __future__ import annotations

import os
import platform
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in
                   Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    import torch
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (f"{cpu}, {len(os.sched_getaffinity(0))} cores, {memory:.0f} GiB; Linux "
            f"{platform.release()}; Python {platform.python_version()}, torch {torch.__version__}")


def markers(name: str) -> tuple[str, str]:
    return f"<!-- {name}:begin -->", f"<!-- {name}:end -->"


def write_section(name: str, body: str, out: Path = RESULTS) -> str:
    """Replace (or append) the section `name` of `out`; returns the section written."""
    begin, end = markers(name)
    section = f"{begin}\n{body.strip()}\n{end}\n"
    text = out.read_text() if out.exists() else "# Benchmark results\n"
    if begin in text:
        text = text[:text.index(begin)] + section + text[text.index(end) + len(end) + 1:]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    out.write_text(text)
    return section
