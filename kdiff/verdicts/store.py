"""The results store: every verdict in an embedded SQLite file the moment it is known.

A verdict is keyed by what decides it: the bench, the problem's and the candidate's content
hashes, the native preset, the options that change a judgement (gate options, timeouts) and
the code of the case's own judgement (kdiff.verdicts.code.case_code: the judging loop, the
sandbox, the bench's adapter). Each gate's result is a row of its own under that key, marked
with the code that gate runs (gate_code): a later run with more gates judges only the gates
that are missing, and a fix to one gate re-judges that gate's results only. The database runs in WAL mode with one
transaction per verdict: killing kdiff at any moment loses at most the verdict being judged.

A run is recorded too (its cases, in order, with their ids and metadata, and its gate list),
so that `kdiff report --store PATH` can render any report from the store alone. Running the
same command again opens the same run and judges only what is missing. Runs and verdicts move
to another machine's store as records (kdiff.verdicts.records).

Only the judge's driver process writes here; candidates' workers cannot (kdiff.sandbox.confine).
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from kdiff import __version__
from kdiff.data.code import source_digest
from kdiff.data.files import UnreadableFile
from kdiff.data.model import TRANSIENT_ERROR_KIND, Case, GateResult, NativeVerdict, Verdict
from kdiff.data.provenance import Provenance
from kdiff.data.stream import CaseStream, as_stream
from kdiff.gates.registry import GATE_IDS
from kdiff.judging.runconfig import RunConfig
from kdiff.verdicts.code import case_code, gate_code

SCHEMA = """
CREATE TABLE IF NOT EXISTS verdicts (
    key TEXT PRIMARY KEY, bench TEXT, problem_sha TEXT, candidate_sha TEXT, native_preset TEXT,
    options TEXT, kdiff_version TEXT, native TEXT, error TEXT, error_kind TEXT, judged_at REAL,
    scaled_sizes TEXT, provenance TEXT);
CREATE TABLE IF NOT EXISTS gate_results (
    key TEXT, gate TEXT, result TEXT, code TEXT, PRIMARY KEY (key, gate));
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY, bench TEXT, native_preset TEXT, device TEXT, gates TEXT,
    options TEXT, kdiff_version TEXT, command TEXT, started_at REAL, n_cases INTEGER);
CREATE TABLE IF NOT EXISTS run_cases (
    run TEXT, position INTEGER, key TEXT, case_json TEXT, PRIMARY KEY (run, position));
"""


DEFAULT_NAME = "kdiff-store.sqlite"


def default_path(*report_options: Path | None) -> Path:
    """The run's output folder holds its store: beside the first report asked for, else in
    ./kdiff-out."""
    for path in report_options:
        if path is not None:
            return Path(path).parent / DEFAULT_NAME
    return Path("kdiff-out") / DEFAULT_NAME


def file_sha256(path: Path) -> str:
    """The digest a case's file is keyed by (kdiff.data.code.source_digest), or "missing"."""
    try:
        return source_digest(Path(path))
    except (OSError, UnreadableFile):
        return "missing"


def options_key(config: RunConfig, preset: str) -> str:
    """Everything besides the files and the gate list that can change a verdict."""
    return json.dumps({
        "native": preset, "gate_options": dataclasses.asdict(config.gate_options),
        "call_timeout": config.limits.call_timeout, "case_timeout": config.limits.case_timeout,
    }, sort_keys=True, default=str)


def case_to_json(case: Case) -> dict[str, Any]:
    return {"id": case.id, "problem": str(case.problem), "candidate": str(case.candidate),
            "bench": case.bench, "metadata": case.metadata,
            "recorded_accept": case.recorded_accept, "discovery_error": case.discovery_error}


def case_from_json(data: dict[str, Any]) -> Case:
    return Case(id=data["id"], problem=Path(data["problem"]), candidate=Path(data["candidate"]),
                bench=data.get("bench", "kernelbench"), metadata=data.get("metadata") or {},
                recorded_accept=data.get("recorded_accept"),
                discovery_error=data.get("discovery_error"))


@dataclass
class RunInfo:
    id: str
    bench: str
    native_preset: str
    device: str
    gates: list[str]
    command: str
    started_at: float
    n_cases: int
    n_judged: int = 0


class UnreadableStore(Exception):
    """The file is no results store: not SQLite, damaged, or another program's database."""


def _schema_columns() -> dict[str, list[str]]:
    """table -> its columns, as SCHEMA makes them (read from an in-memory database)."""
    db = sqlite3.connect(":memory:")
    db.executescript(SCHEMA)
    tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE "
                                             "type='table'")]
    columns = {t: [row[1] for row in db.execute(f"PRAGMA table_info({t})")] for t in tables}
    db.close()
    return columns


EXPECTED_COLUMNS = _schema_columns()
# A column that stores written by an earlier kdiff lack, and that opening one adds.
ADDED_COLUMNS = {("verdicts", "scaled_sizes"): "TEXT", ("gate_results", "code"): "TEXT",
                 ("verdicts", "provenance"): "TEXT"}


class ResultsStore:
    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(self.path), isolation_level=None, timeout=60)
        try:
            self._open()
        except sqlite3.DatabaseError as exc:
            self.db.close()
            raise UnreadableStore(f"{self.path}: not a readable results store ({exc})") from None
        self._sha: dict[tuple[str, int, int], str] = {}

    def _open(self) -> None:
        self.db.execute("PRAGMA journal_mode=WAL")
        # NORMAL: a commit survives the process being killed (not a power cut) without an
        # fsync per verdict.
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)
        for (table, column), kind in ADDED_COLUMNS.items():
            if column not in self._table_columns(table):
                self.db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
        for table, columns in EXPECTED_COLUMNS.items():
            if self._table_columns(table) != columns:
                raise sqlite3.DatabaseError(f"table {table} has columns "
                                            f"{self._table_columns(table)}, not {columns}")

    def _table_columns(self, table: str) -> list[str]:
        return [row[1] for row in self.db.execute(f"PRAGMA table_info({table})")]

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "ResultsStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- keys -----------------------------------------------------------------------------
    def _file_sha(self, path: Path) -> str:
        try:
            st = Path(path).stat()
        except OSError:
            return "missing"
        key = (str(path), st.st_mtime_ns, st.st_size)
        if key not in self._sha:
            self._sha[key] = file_sha256(path)
        return self._sha[key]

    def key(self, case: Case, config: RunConfig, preset: str) -> str:
        parts = [case.bench, self._file_sha(case.problem), self._file_sha(case.candidate),
                 options_key(config, preset), case_code(case.bench), case.discovery_error or ""]
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()

    # -- verdicts -------------------------------------------------------------------------
    def put(self, case: Case, config: RunConfig, preset: str, verdict: Verdict) -> bool:
        """Stores one verdict in one transaction; False when it is not to be kept."""
        if verdict.error is not None and verdict.error_kind == TRANSIENT_ERROR_KIND:
            return False
        key = self.key(case, config, preset)
        with self.transaction():
            self.db.execute(
                "INSERT OR REPLACE INTO verdicts VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (key, case.bench, self._file_sha(case.problem), self._file_sha(case.candidate),
                 preset, options_key(config, preset), case_code(case.bench),
                 json.dumps(verdict.native.to_json()), verdict.error,
                 verdict.error_kind if verdict.error else None, time.time(),
                 json.dumps(verdict.scaled_sizes),
                 json.dumps(verdict.provenance.to_json()) if verdict.provenance else None))
            self.db.executemany("INSERT OR REPLACE INTO gate_results VALUES (?,?,?,?)",
                                [(key, gid, json.dumps(g.to_json()), gate_code(gid))
                                 for gid, g in verdict.gates.items() if not g.not_run])
        return True

    def get(self, case: Case, config: RunConfig, preset: str, gates: list[str]
            ) -> tuple[Verdict | None, list[str]]:
        """The stored verdict restricted to `gates` and the gates still missing from it;
        (None, gates) when nothing is stored for the case."""
        return self._assemble(case, self.key(case, config, preset), gates)

    def _assemble(self, case: Case, key: str, gates: list[str], current_code: bool = True
                  ) -> tuple[Verdict | None, list[str]]:
        """current_code: only gate results judged by the gates' code now count (resuming a
        run); False for reporting a recorded run as it was judged, whatever has changed
        since (an audit's records stay readable after a gate is fixed)."""
        row = self.db.execute("SELECT native, error, error_kind, scaled_sizes, provenance "
                              "FROM verdicts WHERE key=?", (key,)).fetchone()
        if row is None:
            return None, list(gates)
        with self.parsing("a stored verdict"):
            native = NativeVerdict(**json.loads(row[0]))
            if row[1] is not None:  # the case could not be judged at all: no gate will run
                return Verdict(case, native, {}, error=row[1], error_kind=row[2]), []
            scaled = {name: tuple(pair) for name, pair in json.loads(row[3] or "{}").items()}
            provenance = Provenance.from_json(json.loads(row[4])) if row[4] else None
            # A result of other code than the gate's now was judged by an older gate.
            stored = {gid: GateResult.from_json(gid, json.loads(result)) for gid, result, code
                      in self.db.execute("SELECT gate, result, code FROM gate_results "
                                         "WHERE key=?", (key,))
                      if gid in GATE_IDS and (not current_code or code == gate_code(gid))}
        # What the harness recorded belongs to the case, not to the (shared) content.
        native.recorded = case.recorded_accept
        results = {gid: stored[gid] for gid in gates if gid in stored}
        return (Verdict(case, native, results, scaled_sizes=scaled, provenance=provenance),
                [gid for gid in gates if gid not in stored])

    # -- runs -----------------------------------------------------------------------------
    def begin_run(self, cases: list[Case], config: RunConfig, preset: str, gates: list[str],
                  command: str = "") -> str:
        """Records a run (or finds the same one, to resume it) and returns its id."""
        keys = [self.key(c, config, preset) for c in cases]
        ident = hashlib.sha256(json.dumps(
            [config.bench, preset, config.device, gates, options_key(config, preset),
             __version__, keys, [c.id for c in cases]]).encode()).hexdigest()[:16]
        with self.transaction():
            if self.db.execute("SELECT 1 FROM runs WHERE id=?", (ident,)).fetchone() is None:
                self.db.execute("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?)",
                                (ident, config.bench, preset, config.device, json.dumps(gates),
                                 options_key(config, preset), case_code(config.bench), command,
                                 time.time(), len(cases)))
                self.db.executemany("INSERT INTO run_cases VALUES (?,?,?,?)",
                                    [(ident, i, k, json.dumps(case_to_json(c), default=str))
                                     for i, (k, c) in enumerate(zip(keys, cases))])
        return ident

    def runs(self) -> list[RunInfo]:
        """Every recorded run, the latest first."""
        out = []
        for row in self.db.execute("SELECT id, bench, native_preset, device, gates, command, "
                                   "started_at, n_cases FROM runs ORDER BY started_at DESC"):
            with self.parsing("a recorded run"):
                info = RunInfo(row[0], row[1], row[2], row[3], json.loads(row[4]), row[5],
                               row[6], row[7])
            info.n_judged = sum(v is not None and not missing for v, missing in
                                self._run_verdicts(info))
            out.append(info)
        return out

    def _run_verdicts(self, info: RunInfo) -> Iterable[tuple[Verdict | None, list[str]]]:
        for key, case_json in self.db.execute(
                "SELECT key, case_json FROM run_cases WHERE run=? ORDER BY position", (info.id,)):
            with self.parsing("a recorded case"):
                case = case_from_json(json.loads(case_json))
            yield self._assemble(case, key, info.gates, current_code=False)

    def load_run(self, run_id: str | None = None) -> tuple[RunInfo, list[Verdict]]:
        """A run's verdicts in its case order: complete ones only (an interrupted run shows
        what it had judged). The latest run when no id is given; a prefix of an id will do."""
        info = self.find_run(run_id)
        verdicts = [v for v, missing in self._run_verdicts(info) if v is not None and not missing]
        return info, verdicts

    def find_run(self, run_id: str | None = None) -> RunInfo:
        """The run `run_id` names (a prefix of an id will do), or the latest."""
        runs = self.runs()
        if not runs:
            raise LookupError(f"{self.path}: no run recorded")
        if run_id is None:
            return runs[0]
        found = [r for r in runs if r.id.startswith(run_id)]
        if len(found) != 1:
            raise LookupError(f"{self.path}: no single run matches '{run_id}'; recorded: "
                              + ", ".join(r.id for r in runs))
        return found[0]

    # -- plumbing -------------------------------------------------------------------------
    def transaction(self) -> "_Transaction":
        """One transaction: put and begin_run write through it, and so do imported records
        (kdiff.verdicts.records)."""
        return _Transaction(self.db)

    @contextlib.contextmanager
    def parsing(self, what: str) -> Iterator[None]:
        """Rows that do not parse (a damaged file) make the store unreadable, in one line;
        whoever reads rows (the store, exported records) says so through this."""
        try:
            yield
        except (ValueError, KeyError, TypeError) as exc:
            raise UnreadableStore(f"{self.path}: not a readable results store ({what} does "
                                  f"not parse: {type(exc).__name__}: {exc})") from None


def judge_resuming(store: ResultsStore, cases: Iterable[Case] | CaseStream, config: RunConfig,
                   preset: str, gates: list[str],
                   judge_all: Callable[[CaseStream, RunConfig], Iterable[Verdict]]
                   ) -> Iterator[Verdict]:
    """The run's verdicts: those already stored, and the missing ones judged through
    `judge_all` and stored one by one as they land, as the cases become ready. A case stored
    with some of `gates` is judged again on the missing gates only, after the rest."""
    stored: list[Verdict] = []
    partial: dict[tuple[str, ...], list[tuple[Case, Verdict]]] = {}

    def unjudged(case: Case) -> Case | None:
        verdict, missing = store.get(case, config, preset, gates)
        if verdict is not None and not missing:
            stored.append(verdict)
        elif verdict is not None and list(missing) != list(gates):
            partial.setdefault(tuple(missing), []).append((case, verdict))
        else:  # nothing of it stored, or nothing by today's gates
            return case
        return None

    def landed(verdict: Verdict, before: Verdict | None = None) -> Verdict:
        if before is not None and verdict.error is None:
            merged = {**before.gates, **verdict.gates}
            verdict = dataclasses.replace(
                verdict, gates={gid: merged[gid] for gid in gates if gid in merged})
        store.put(verdict.case, config, preset, verdict)
        return verdict

    for verdict in judge_all(as_stream(cases).routed(unjudged), config):
        yield from _drain(stored)
        yield landed(verdict)
    yield from _drain(stored)
    for missing, items in partial.items():
        earlier = {case.id: verdict for case, verdict in items}
        sub = dataclasses.replace(config, gates=list(missing))
        for verdict in judge_all(CaseStream.of(case for case, _ in items), sub):
            yield landed(verdict, earlier.get(verdict.case.id))


def _drain(items: list[Verdict]) -> Iterator[Verdict]:
    while items:
        yield items.pop(0)


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.db.execute("COMMIT" if exc_type is None else "ROLLBACK")
