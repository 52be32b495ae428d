"""TritonBench cases: one per row of the generated-output file(s), paired with its gold file
the way the upstream scripts pair them, and materialised as KernelBench-format files.

`--root` is a TritonBench checkout; `--generated` one jsonl file of generated outputs, or a
folder of them (as upstream's `--source`). `--problems` keeps the rows whose gold file (stem)
or case id is listed. A row that cannot be judged (no gold file matches it, the gold test
does not run here, no call can be replayed) is still a case, with `discovery_error` saying why.
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kdiff.adapters.tritonbench.layout import (
    GeneratedRow,
    GoldFile,
    LayoutError,
    candidate_code,
    gold_folder,
    match_files,
    read_generated,
    read_gold,
    read_statistics,
)
from kdiff.adapters.tritonbench.materialise import (
    GoldCase,
    case_folder,
    prepare_candidate,
    prepare_gold,
)
from kdiff.data.model import Case
from kdiff.data.stream import CaseStream, finished
from kdiff.judging.hookspecs import DiscoveryError
from kdiff.judging.runconfig import RunConfig

BENCH = "tritonbench"


def generated_files(path: Path) -> list[Path]:
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    if not files:
        raise DiscoveryError(f"--generated {path}: no .jsonl files")
    return files


def _rows(config: RunConfig) -> list[tuple[GeneratedRow, GoldFile | LayoutError]]:
    if config.root is None or config.generated is None:
        raise DiscoveryError("tritonbench needs --root (a TritonBench checkout) and "
                             "--generated (a jsonl of generated outputs, or a folder of them)")
    out: list[tuple[GeneratedRow, GoldFile | LayoutError]] = []
    for jsonl in generated_files(config.generated):
        try:
            rows = read_generated(jsonl)
            stats = read_statistics(config.root, rows[0].variant) if rows else []
        except (LayoutError, OSError) as exc:
            raise DiscoveryError(str(exc)) from None
        for row, file in zip(rows, match_files(rows, stats)):
            if isinstance(file, LayoutError):
                out.append((row, file))
                continue
            if config.problems and not ({Path(file).stem, _case_id(row, Path(file).stem)}
                                        & set(config.problems)):
                continue
            try:
                out.append((row, read_gold(gold_folder(config.root, row.variant) / file,
                                           row.variant)))
            except (LayoutError, OSError) as exc:
                out.append((row, LayoutError(str(exc))))
    return out


def _case_id(row: GeneratedRow, name: str) -> str:
    return f"{row.source.stem}/{row.variant}/{name}"


def discover(config: RunConfig) -> CaseStream:
    """The rows' cases, each ready once its gold test is recorded (`config.jobs` recordings
    at once, each a child process): judging starts with the first."""
    rows = _rows(config)
    listing = _listing(rows)
    golds = list({g.path: g for _, g in rows if isinstance(g, GoldFile)}.values())

    def produce(stream: CaseStream) -> None:
        users: dict[Path, list[tuple[GeneratedRow, str]]] = {}  # a gold file's rows
        for (row, gold), case_id in zip(rows, listing):
            if isinstance(gold, LayoutError):
                stream.put(Case(case_id, row.source, row.source, BENCH,
                                {"generated": _origin(row)}, discovery_error=str(gold)))
            else:
                users.setdefault(gold.path, []).append((row, case_id))
        start = time.monotonic()
        width = len(str(len(golds)))

        def record(gold: GoldFile) -> tuple[GoldCase, float]:
            began = time.monotonic()
            return prepare_gold(gold, config.device, config.limits), time.monotonic() - began

        with ThreadPoolExecutor(max(1, config.jobs)) as pool:  # each recording is a child process
            pending = {pool.submit(record, g): g for g in golds}
            # An interrupted run waits for the recordings in progress, not the rest.
            stream.on_close(lambda: pool.shutdown(wait=False, cancel_futures=True))
            for i, done in enumerate(finished(pending), 1):
                prepared, seconds = done.result()
                said = ("cannot be judged: " + prepared.error if prepared.error
                        else f"calls recorded in {seconds:.1f} s")
                # Recording runs every gold test of the file once: say how it goes.
                stream.note(f"[gold {i:>{width}}/{len(golds)} {time.monotonic() - start:6.1f}s] "
                            f"{prepared.gold.name}: {said}"[:160])
                for row, case_id in users[pending[done].path]:
                    stream.put(_case(row, prepared, case_id))

    return CaseStream.produced(listing, produce)


def _listing(rows: list[tuple[GeneratedRow, GoldFile | LayoutError]]) -> list[str]:
    """Each row's case id, in the rows' order; a gold file answered twice in one file gets
    the second answer's line in its id."""
    ids: list[str] = []
    seen: set[str] = set()
    for row, gold in rows:
        if isinstance(gold, LayoutError):
            ids.append(f"{row.source.stem}/{row.variant}/line-{row.line}")
            continue
        case_id = _case_id(row, gold.name)
        if case_id in seen:
            case_id = f"{case_id}@{row.line}"
        seen.add(case_id)
        ids.append(case_id)
    return ids


def _origin(row: GeneratedRow) -> str:
    return f"{row.source.name} line {row.line}"


def _case(row: GeneratedRow, gold: GoldCase, case_id: str) -> Case:
    folder = case_folder(row.source, row.variant, gold.gold.name, row.line)
    origin = _origin(row)
    candidate = prepare_candidate(gold, candidate_code(row), folder, origin)
    metadata = {"variant": row.variant, "file": gold.gold.path.name, "generated": origin,
                "target": gold.target, "call": gold.call_index,
                "script": str(folder / gold.gold.path.name), "gold_script": str(gold.script)}
    if gold.error:
        return Case(case_id, gold.gold.path, folder / "generated.py", BENCH, metadata,
                    discovery_error=gold.error)
    return Case(case_id, gold.problem, candidate.candidate, BENCH, metadata)
