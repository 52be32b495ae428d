"""The oracle cache: the float64 oracle and the working-precision reference on one input set,
kept on disk across candidates and runs (an RL loop judges dozens of candidates of one
problem on the same inputs).

An entry is named by everything an evaluation is a function of: the problem file's content
and that of the modules beside it that it names (problem_sources), the sizes it is judged
at, the model's seed, the working dtype, the digest of the inputs (kdiff.data.digest),
whether magnitudes were traced and the backward pass taken, the device (its float64 and
working-precision libraries), torch's version, and the code that computes an evaluation
(ORACLE_SOURCES). Only the judge writes here, and only what it computed itself: nothing a
candidate's worker returned is ever stored (spec: Verdict integrity). Entries are tensor files
(kdiff.data.tensorfile): reading one runs none of its content as code.
"""
from __future__ import annotations

import functools
import hashlib
import multiprocessing.util
import os
import queue
import stat
import threading
from pathlib import Path
from typing import Any

import torch

from kdiff.data.cache import cache_key, private_root, write_atomic
from kdiff.data.files import UnreadableFile, joined, with_named_siblings
from kdiff.data.tensorfile import dumps, loads
from kdiff.sandbox.protocol import materialised_bytes

FORMAT = 3  # the layout of an entry's fields: a change makes every entry again
SUFFIX = ".entry"
# The modules whose code decides an evaluation's values: drawing and rounding inputs, sizes,
# loading and building the reference (its parameters redrawn at another seed), running it, the
# gradients a backward problem adds (which inputs, and how), and the oracle's trace with every
# kdiff module it imports (the steps and picks of integers, windows' pools, tolerance's step
# magnitude, the backwards of softmax and the normalisations written out, accumulation's
# running products and the classes their alternatives are kept by, a VJP's kinks, the
# dispatch mode, the formats a reference reads from its tensors): a change there changes the
# magnitudes an entry holds.
ORACLE_SOURCES = ("kdiff.numerics.oracle", "kdiff.numerics.integers", "kdiff.numerics.windows",
                  "kdiff.numerics.tolerance", "kdiff.numerics.softmax_backward",
                  "kdiff.numerics.normalisation_backward", "kdiff.numerics.accumulation",
                  "kdiff.numerics.classes", "kdiff.numerics.kinks", "kdiff.numerics.operands",
                  "kdiff.data.dispatch", "kdiff.numerics.inputs",
                  "kdiff.numerics.sizes", "kdiff.data.problem", "kdiff.data.seeding",
                  "kdiff.data.differentiated", "kdiff.data.vjp", "kdiff.data.trained",
                  "kdiff.data.digest", "kdiff.judging.context",
                  "kdiff.numerics.working_formats")
# Entries larger than this stay in memory only: at --max-elements 2^20 one evaluation of a
# three-output problem is ~40 MB (float64 values and magnitudes, the reference), and a level
# of a benchmark has hundreds of problems of some 50 evaluations each; 16 MiB keeps the
# CPU corpus (at most 2^16 elements per output) and the small problems of a GPU audit.
MAX_ENTRY_BYTES = 16 << 20
# The whole oracle cache: past this, the entries used longest ago are deleted (a judge prunes
# when it opens its first problem's cache). The shipped CPU corpus fills ~300 MB; 4 GiB holds
# a level of an audit's small problems, or the candidates of one RL run's problems, on any
# disk kdiff's other caches fit on.
MAX_TOTAL_BYTES = 4 << 30
# A judge prunes again once it has stored this much since: the cache exceeds its budget by at
# most this per judge process. Pruning walks every entry: 70 ms for the 10,000 a long-used
# machine held, 4.6 s of judge time when each of the default run's 64 kernels pruned.
PRUNE_AFTER_BYTES = MAX_TOTAL_BYTES // 16
# Bytes stored by this process since it last pruned, by cache root (absent: never pruned).
_STORED_SINCE_PRUNE: dict[Path, int] = {}
# Entries waiting for the writer thread: the judge waits only once this many are queued.
QUEUED = 8


@functools.lru_cache(maxsize=None)
def oracle_code() -> str:
    """A digest of ORACLE_SOURCES and torch's version."""
    import importlib.util
    h = hashlib.sha256(torch.__version__.encode())
    for name in ORACLE_SOURCES:
        spec = importlib.util.find_spec(name)
        h.update(f"\0{name}\0".encode() + Path(spec.origin).read_bytes())
    return h.hexdigest()[:16]


def device_name(device: str) -> str:
    """The device as its results depend on it: the GPU model under CUDA."""
    if device.startswith("cuda") and torch.cuda.is_available():
        return f"cuda:{torch.cuda.get_device_name()}"
    return device


def problem_sources(problem: Path) -> bytes:
    """The problem file's content, then the name and content of each module beside it that it
    names (kdiff.data.files.with_named_siblings): an edited helper is another problem."""
    return joined(with_named_siblings(problem))


class OracleCache:
    """The evaluations of one problem (problem_sources) on one device; none where not
    `on_disk` (a judge whose workers could write the folder keeps its evaluations in memory)."""

    def __init__(self, problem: Path, device: str, on_disk: bool = True) -> None:
        try:
            content = problem_sources(problem) if on_disk else None
        except (OSError, UnreadableFile):
            content = None  # not cached: no content to name the entries by
        # A judge's own folder: a candidate that read it would find the answers it is asked.
        self.folder = None if content is None else private_root() / "oracle" / cache_key(
            FORMAT, hashlib.sha256(content).hexdigest(), device_name(device),
            oracle_code())
        root = private_root() / "oracle"
        if _STORED_SINCE_PRUNE.get(root, PRUNE_AFTER_BYTES) >= PRUNE_AFTER_BYTES:
            prune(root, MAX_TOTAL_BYTES)
            _STORED_SINCE_PRUNE[root] = 0

    def path(self, *parts: Any) -> Path | None:
        if self.folder is None:
            return None
        return self.folder / f"{cache_key(FORMAT, *map(str, parts))}{SUFFIX}"

    @staticmethod
    def load(path: Path | None, device: str) -> dict[str, Any] | None:
        """The entry at `path` with its tensors on `device`, or None (absent or unreadable:
        computed again). One this process stored and has not written yet is read from
        memory."""
        if path is None:
            return None
        if (waiting := WRITER.pending.get(path)) is not None:
            return _to(waiting, device)
        if not path.is_file():
            return None
        try:
            entry = loads(path.read_bytes())
            path.touch()  # used now: the last to be pruned
        except Exception:  # noqa: BLE001 - a damaged or foreign file (or one pruned) is a miss
            return None
        return _to(entry, device) if isinstance(entry, dict) else None

    @staticmethod
    def store(path: Path | None, entry: dict[str, Any]) -> None:
        """Queues `entry` for the writer thread (WRITER): its tensors, the judge's own, are
        only read from now on."""
        if path is None:
            return
        size = materialised_bytes(entry)
        if size > MAX_ENTRY_BYTES:
            return
        if (root := path.parent.parent) in _STORED_SINCE_PRUNE:
            _STORED_SINCE_PRUNE[root] += size
        WRITER.put(path, entry)


def _write(path: Path, entry: dict[str, Any]) -> None:
    data = dumps(entry)
    if len(data) > MAX_ENTRY_BYTES:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data)


class EntryWriter:
    """Writes entries on a thread of its own, so that the judge goes on meanwhile: copying an
    evaluation to the host and writing it took longer than computing it for small problems
    (about 35 ms an evaluation of a 2^18-element ReLU, both on the H200's host and on a
    2-core CPU machine: benchmarks/cost.py under py-spy and cProfile). Each process starts
    its own thread at its first entry (a forked judge does not inherit its parent's) and
    waits for the queue to empty at its exit, a pool's judge processes included
    (multiprocessing's exit function runs the Finalize). An entry lost to a kill is computed
    again next time."""

    def __init__(self) -> None:
        self.pending: dict[Path, dict[str, Any]] = {}
        self._queue: queue.Queue | None = None
        self._pid: int | None = None

    def put(self, path: Path, entry: dict[str, Any]) -> None:
        if self._pid != os.getpid():
            self._start()
        self.pending[path] = entry
        self._queue.put((path, entry))

    def flush(self) -> None:
        """Returns once every entry queued by this process is written (or failed)."""
        if self._pid == os.getpid():
            self._queue.join()

    def _start(self) -> None:
        self._pid, self.pending, self._queue = os.getpid(), {}, queue.Queue(maxsize=QUEUED)
        threading.Thread(target=self._run, args=(self._queue, self.pending), daemon=True,
                         name="kdiff-oracle-cache").start()
        multiprocessing.util.Finalize(None, self.flush, exitpriority=10)

    @staticmethod
    def _run(entries: queue.Queue, pending: dict[Path, dict[str, Any]]) -> None:
        while True:
            path, entry = entries.get()
            try:
                _write(path, entry)
            except Exception:  # noqa: BLE001 - a full disk or a pruned folder: a miss later
                pass
            finally:
                if pending.get(path) is entry:
                    del pending[path]
                entries.task_done()


WRITER = EntryWriter()


def prune(root: Path, budget: int) -> None:
    """Deletes the entries under `root` used longest ago until they total at most `budget`
    bytes. Another judge may prune the same files at once: one already gone is skipped."""
    entries = []
    for path in root.glob("*/*"):  # entries of any format (one no longer read, too)
        try:
            st = path.stat()
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            entries.append((st.st_mtime, st.st_size, path))
    total = sum(size for _, size, _ in entries)
    for _, size, path in sorted(entries, key=lambda e: e[0]):
        if total <= budget:
            break
        path.unlink(missing_ok=True)
        total -= size


def _to(x: Any, device: str) -> Any:
    if isinstance(x, torch.Tensor):
        return x.to(device)
    if isinstance(x, dict):
        return {k: _to(v, device) for k, v in x.items()}
    if isinstance(x, list):
        return [_to(v, device) for v in x]
    return x
