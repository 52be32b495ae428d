"""Verdict records: a results store's verdicts and runs as a portable file, so that an audit
judged on a machine that is wiped afterwards survives to the next one (benchmarks/audits/).

A records file is gzip-compressed JSON Lines (`.jsonl.gz`): a header line (the format, the
kdiff that wrote it, and the runs exported with their cases), then one line per verdict
with its gate results, sorted by key. Keys, code digests and timestamps are copied as
stored, so an imported verdict is reused by `kdiff run --store` only for the same files
judged by the same code, and a gate whose code changed since is judged again alone (the
store's own rules; kdiff.verdicts.store).

Records hold verdicts, never third-party code. Exceptions from a candidate or a benchmark
quote its source (tracebacks, assertion messages written in its files), so every free-text
field is cut by `redact`, and case metadata keeps only short plain values. Exporting the
same store twice writes the same bytes, so a committed file changes only when verdicts do.
"""
from __future__ import annotations

import contextlib
import dataclasses
import gzip
import json
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

from kdiff import __version__
from kdiff.data.model import GateResult, NativeVerdict
from kdiff.verdicts.store import ResultsStore

FORMAT = "kdiff verdict records"
VERSION = 1
SUFFIX = ".jsonl.gz"

# -- what may leave the machine ------------------------------------------------------------
# The end of an exception's type name (the last part of a dotted name, `torch.OutOfMemoryError`):
# what follows it is the exception's message, written by whoever raised it.
EXCEPTION_NAME = re.compile(r"\b\w*(?:Error|Exception|Exit|Interrupt|Warning)\b")
NOT_KEPT = " (message not kept)"
MAX_TEXT = 200
MAX_METADATA_TEXT = 120


def redact(text: str) -> str:
    """Free text as records keep it: its first line, cut after the first exception type
    name it gives (the message may quote third-party code), at most MAX_TEXT characters.
    kdiff's own messages ("5/5 trials within atol=rtol=0.0001") pass whole."""
    line = text.split("\n", 1)[0].rstrip("\r")
    found = EXCEPTION_NAME.search(line)
    if found is None:
        return line[:MAX_TEXT]
    return line[:min(found.end(), MAX_TEXT - len(NOT_KEPT))] + NOT_KEPT


def _plain(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float)):
        return True
    return (isinstance(value, str) and len(value) <= MAX_METADATA_TEXT
            and "\n" not in value and "\r" not in value)


def _portable_case(case: dict[str, Any]) -> dict[str, Any]:
    """A run's case (store.case_to_json) with its metadata reduced to short plain values
    (an adapter may keep a prompt or a whole source there) and its discovery error cut."""
    metadata = {name: value for name, value in (case.get("metadata") or {}).items()
                if _plain(value) or (isinstance(value, list) and all(map(_plain, value)))}
    error = case.get("discovery_error")
    return {**case, "metadata": metadata, "discovery_error": redact(error) if error else error}


def _redacted(data: dict[str, Any] | None, field: str) -> dict[str, Any] | None:
    """`data` with its free-text `field` cut by redact."""
    if data is None or not data.get(field):
        return data
    return {**data, field: redact(data[field])}


# -- the records ---------------------------------------------------------------------------
@dataclass
class CaseRecord:
    """One case of a run, in the run's order; `key` finds its verdict."""

    position: int
    key: str
    case: dict[str, Any]


@dataclass
class RunRecord:
    """A row of the store's runs table with its cases: what `kdiff report` renders."""

    id: str
    bench: str
    native_preset: str
    device: str
    gates: list[str]
    options: dict[str, Any]
    case_code: str  # the digest of the judging code (the runs table's kdiff_version column)
    command: str
    started_at: float
    n_cases: int
    # Every case, judged or not: a run resumed on the next machine is found by its id and
    # does not record its cases again.
    cases: list[CaseRecord]


@dataclass
class GateRecord:
    gate: str
    result: dict[str, Any]  # GateResult.to_json, its detail redacted
    code: str | None  # the gate's code digest when it judged (None in stores that predate it)


@dataclass
class VerdictRecord:
    """A row of the store's verdicts table with its gate results."""

    key: str
    bench: str
    problem_sha: str
    candidate_sha: str
    native_preset: str
    options: dict[str, Any]
    case_code: str  # the verdicts table's kdiff_version column
    native: dict[str, Any]  # NativeVerdict.to_json, its reason redacted
    error: str | None
    error_kind: str | None
    judged_at: float
    scaled_sizes: dict[str, list[int]]
    provenance: dict[str, Any] | None
    gates: list[GateRecord]


@dataclass
class Tally:
    verdicts: int = 0
    gate_results: int = 0
    runs: int = 0

    def __str__(self) -> str:
        return ", ".join(f"{n:,} {name if n == 1 else name + 's'}" for n, name in
                         ((self.verdicts, "verdict"), (self.gate_results, "gate result"),
                          (self.runs, "run")))


@dataclass
class Records:
    runs: list[RunRecord]
    verdicts: list[VerdictRecord]

    def tally(self) -> Tally:
        return Tally(len(self.verdicts), sum(len(v.gates) for v in self.verdicts),
                     len(self.runs))


class UnreadableRecords(Exception):
    """The file is no verdict records of this format: one line naming it and the cause."""


# -- export --------------------------------------------------------------------------------
def export(store_path: Path | str, out_path: Path | str, run_id: str | None = None) -> Records:
    """Writes the store's runs and verdicts (or one run and its verdicts: `run_id`, a prefix
    will do) to `out_path` and returns what was written."""
    with ResultsStore(store_path) as store:
        records = _from_store(store, run_id)
    write(records, Path(out_path))
    return records


def _from_store(store: ResultsStore, run_id: str | None) -> Records:
    only = store.find_run(run_id).id if run_id is not None else None
    runs = []
    for row in store.db.execute(
            "SELECT id, bench, native_preset, device, gates, options, kdiff_version, command, "
            "started_at, n_cases FROM runs WHERE ?1 IS NULL OR id=?1 ORDER BY started_at, id",
            (only,)):
        with store.parsing("a recorded run"):
            cases = [CaseRecord(position, key, _portable_case(json.loads(case)))
                     for position, key, case in store.db.execute(
                         "SELECT position, key, case_json FROM run_cases WHERE run=? "
                         "ORDER BY position", (row[0],))]
            runs.append(RunRecord(row[0], row[1], row[2], row[3], json.loads(row[4]),
                                  json.loads(row[5]), row[6], row[7], row[8], row[9], cases))
    verdicts = []
    for row in store.db.execute(
            "SELECT key, bench, problem_sha, candidate_sha, native_preset, options, "
            "kdiff_version, native, error, error_kind, judged_at, scaled_sizes, provenance "
            "FROM verdicts WHERE ?1 IS NULL OR key IN (SELECT key FROM run_cases WHERE run=?1) "
            "ORDER BY key", (only,)):
        with store.parsing("a stored verdict"):
            gates = [GateRecord(gate, _redacted(json.loads(result), "detail"), code)
                     for gate, result, code in store.db.execute(
                         "SELECT gate, result, code FROM gate_results WHERE key=? ORDER BY gate",
                         (row[0],))]
            verdicts.append(VerdictRecord(
                row[0], row[1], row[2], row[3], row[4], json.loads(row[5]), row[6],
                _redacted(json.loads(row[7]), "reason"), redact(row[8]) if row[8] else row[8],
                row[9], row[10], json.loads(row[11] or "{}"),
                _redacted(json.loads(row[12]), "detail") if row[12] else None, gates))
    return Records(runs, verdicts)


def write(records: Records, path: Path) -> None:
    """Same records, same bytes: sorted keys, and no time or file name in the gzip header."""
    header = {"format": FORMAT, "version": VERSION, "kdiff_version": __version__,
              "runs": [dataclasses.asdict(r) for r in records.runs]}
    lines = [header, *(dataclasses.asdict(v) for v in records.verdicts)]
    text = "".join(json.dumps(line, sort_keys=True) + "\n" for line in lines)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(text.encode(), mtime=0))


# -- import --------------------------------------------------------------------------------
def load(paths: Iterable[Path | str]) -> Records:
    """The records of every file, in order; UnreadableRecords for the first that is none."""
    runs: list[RunRecord] = []
    verdicts: list[VerdictRecord] = []
    for path in paths:
        records = _read(Path(path))
        runs += records.runs
        verdicts += records.verdicts
    return Records(runs, verdicts)


def import_into(store_path: Path | str, record_paths: Iterable[Path | str]) -> tuple[Tally, Tally]:
    """Adds the records' runs and verdicts to the store (created if missing), in one
    transaction, and returns (read, added). A verdict, gate result or run already in the
    store is kept: what was judged locally wins over what was imported."""
    records = load(record_paths)  # every file read before the store is touched
    added = Tally()
    with ResultsStore(store_path) as store, store.transaction():
        db = store.db
        for run in records.runs:
            added.runs += db.execute(
                "INSERT OR IGNORE INTO runs (id, bench, native_preset, device, gates, options, "
                "kdiff_version, command, started_at, n_cases) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (run.id, run.bench, run.native_preset, run.device, json.dumps(run.gates),
                 json.dumps(run.options, sort_keys=True), run.case_code, run.command,
                 run.started_at, run.n_cases)).rowcount
            db.executemany("INSERT OR IGNORE INTO run_cases (run, position, key, case_json) "
                           "VALUES (?,?,?,?)", [(run.id, c.position, c.key, json.dumps(c.case))
                                                for c in run.cases])
        for v in records.verdicts:
            added.verdicts += db.execute(
                "INSERT OR IGNORE INTO verdicts (key, bench, problem_sha, candidate_sha, "
                "native_preset, options, kdiff_version, native, error, error_kind, judged_at, "
                "scaled_sizes, provenance) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (v.key, v.bench, v.problem_sha, v.candidate_sha, v.native_preset,
                 json.dumps(v.options, sort_keys=True), v.case_code, json.dumps(v.native),
                 v.error, v.error_kind, v.judged_at, json.dumps(v.scaled_sizes),
                 json.dumps(v.provenance) if v.provenance is not None else None)).rowcount
            added.gate_results += db.executemany(
                "INSERT OR IGNORE INTO gate_results (key, gate, result, code) VALUES (?,?,?,?)",
                [(v.key, g.gate, json.dumps(g.result), g.code) for g in v.gates]).rowcount
    return records.tally(), added


def _read(path: Path) -> Records:
    def unreadable(cause: str) -> UnreadableRecords:
        return UnreadableRecords(f"{path}: not kdiff verdict records ({cause})")

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UnreadableRecords(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        text = gzip.decompress(data).decode("utf-8")
    except (OSError, EOFError, zlib.error) as exc:
        raise unreadable(f"not gzip-compressed: {exc}") from None
    except UnicodeDecodeError:
        raise unreadable("not UTF-8 text") from None

    @contextlib.contextmanager
    def line(number: int) -> Iterator[None]:
        try:
            yield
        except (ValueError, KeyError, TypeError) as exc:
            raise unreadable(f"line {number} does not parse: {type(exc).__name__}: {exc}"
                             ) from None

    lines = text.splitlines()
    with line(1):
        header = json.loads(lines[0]) if lines else None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise unreadable(f"line 1 is no header of {FORMAT!r}")
    if header.get("version") != VERSION:
        raise unreadable(f"format version {header.get('version')}; this kdiff reads "
                         f"version {VERSION}")
    with line(1):
        runs = [_run(data) for data in header["runs"]]
    verdicts = []
    for number, text_line in enumerate(lines[1:], start=2):
        with line(number):
            verdicts.append(_verdict(json.loads(text_line)))
    return Records(runs, verdicts)


def _run(data: dict[str, Any]) -> RunRecord:
    return RunRecord(**{**data, "cases": [CaseRecord(**c) for c in data["cases"]]})


def _verdict(data: dict[str, Any]) -> VerdictRecord:
    verdict = VerdictRecord(**{**data, "gates": [GateRecord(**g) for g in data["gates"]]})
    # What the store will parse when it assembles the verdict must parse now.
    NativeVerdict(**verdict.native)
    for g in verdict.gates:
        GateResult.from_json(g.gate, g.result)
    return verdict
