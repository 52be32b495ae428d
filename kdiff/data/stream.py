"""A run's cases as they become ready: listed upfront by id (the adapter's order, which the
reports keep), handed over one by one as each is prepared.

TritonBench's cases wait for their gold test to be recorded (a child process for each of a
file's gold tests, CUDA's start and Triton's compiles in each). An adapter returns its cases
as a stream so that the judges start on the first prepared case instead of after the last; a
list is the stream whose cases are all ready at once (`CaseStream.of`).

Producers `put` cases and `end` the stream (`CaseStream.produced` runs a producer on a
thread of its own); the one consumer `take`s them, in the order they became ready, on its own
thread: whatever it does with a case (a store lookup, a submission) stays on that thread.
"""
from __future__ import annotations

import queue
import sys
import threading
from concurrent.futures import Future
from typing import Callable, Iterable, Iterator, Sequence, TypeVar

from kdiff.data.model import Case

T = TypeVar("T")


class _End:
    def __init__(self, error: BaseException | None) -> None:
        self.error = error


class CaseStream:
    """The cases of `ids`, ready over time. `note` carries the producer's progress lines
    (`on_note`, stderr by default; a progress display sets its own)."""

    def __init__(self, ids: Sequence[str]) -> None:
        self.ids = tuple(ids)
        self.on_note: Callable[[str], None] = _to_stderr
        self._ready: queue.SimpleQueue[Case | _End] = queue.SimpleQueue()
        self._put: list[Case] = []
        self._finished = threading.Event()  # the producer is done: every case is known
        self._complete = False  # the consumer has taken every case
        self._thread: threading.Thread | None = None
        self._on_close: list[Callable[[], None]] = []
        self._closed = False
        self._route: Callable[[Case], Case | None] = _kept

    @classmethod
    def of(cls, cases: Iterable[Case]) -> "CaseStream":
        cases = list(cases)
        stream = cls([c.id for c in cases])
        for case in cases:
            stream.put(case)
        stream.end()
        return stream

    @classmethod
    def produced(cls, ids: Sequence[str], produce: Callable[["CaseStream"], None]
                 ) -> "CaseStream":
        """The stream `produce(stream)` fills on a thread of its own; it ends when `produce`
        returns, and an exception it raises is raised again by the consumer's `take`."""
        stream = cls(ids)

        def run() -> None:
            try:
                produce(stream)
            except BaseException as exc:  # noqa: BLE001 - handed to the consumer
                stream.end(exc)
            else:
                stream.end()

        stream._thread = threading.Thread(target=run, daemon=True, name="kdiff-cases")
        stream._thread.start()
        return stream

    # -- the producer's side ----------------------------------------------------------------
    def put(self, case: Case) -> None:
        self._put.append(case)
        self._ready.put(case)

    def end(self, error: BaseException | None = None) -> None:
        self._finished.set()
        self._ready.put(_End(error))

    def note(self, text: str) -> None:
        if not self._closed:  # once the run has reported, the work still ending says nothing
            self.on_note(text)

    def on_close(self, stop: Callable[[], None]) -> None:
        """`stop` is called when the consumer closes the stream (cancel what has not
        started), at once if it has."""
        self._on_close.append(stop)
        if self._closed:
            stop()

    # -- the consumer's side ----------------------------------------------------------------
    @property
    def finished(self) -> bool:
        """Every case is known (`listed` has them all), taken or not."""
        return self._finished.is_set()

    @property
    def complete(self) -> bool:
        """Every case has been taken."""
        return self._complete

    @property
    def producing(self) -> bool:
        """A producer thread is still running (a forked process would inherit the locks it
        holds, not the thread)."""
        return self._thread is not None and self._thread.is_alive()

    def take(self, timeout: float | None = 0.0) -> list[Case]:
        """The cases ready since the last take, waiting up to `timeout` seconds (None: for
        ever) for the first of them; [] when none came in time or the stream is complete."""
        out: list[Case] = []
        block = True
        while not self._complete:
            try:
                item = self._ready.get(block, timeout) if block else self._ready.get_nowait()
            except queue.Empty:
                break
            block = False
            if isinstance(item, _End):
                self._complete = True
                if item.error is not None:
                    raise item.error
            elif (routed := self._route(item)) is not None:
                out.append(routed)
        return out

    def __iter__(self) -> Iterator[Case]:
        while not self.complete:
            yield from self.take(None)

    def __len__(self) -> int:
        return len(self.ids)

    def listed(self) -> list[Case]:
        """Every case in the listing's order; only once `finished`."""
        if not self.finished:
            raise RuntimeError("the stream's cases are not all known yet")
        order = {ident: i for i, ident in enumerate(self.ids)}
        return sorted(self._put, key=lambda c: order.get(c.id, len(order)))

    def close(self) -> None:
        """The consumer wants no more cases (the run ends, or was interrupted): the
        producer's pending work is cancelled; work in progress ends by its own deadline."""
        self._closed = True
        for stop in self._on_close:
            stop()

    def routed(self, route: Callable[[Case], Case | None]) -> "CaseStream":
        """This stream, its consumer passing each case it takes through `route` (None: kept
        back, as a case whose verdict is stored already), on the consumer's thread."""
        self._route = route
        return self


def finished(futures: Iterable[Future[T]]) -> Iterator[Future[T]]:
    """The futures as they finish, less those cancelled: a producer's loop over its pool's
    work. (`as_completed` waits for ever on a future that `shutdown(cancel_futures=True)`
    cancelled: it is never notified.)"""
    done: queue.SimpleQueue[Future[T]] = queue.SimpleQueue()
    futures = list(futures)
    for future in futures:
        future.add_done_callback(done.put)
    for _ in futures:
        future = done.get()
        if not future.cancelled():
            yield future


def as_stream(cases: Iterable[Case] | CaseStream) -> CaseStream:
    return cases if isinstance(cases, CaseStream) else CaseStream.of(cases)


def _kept(case: Case) -> Case:
    return case


def _to_stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
