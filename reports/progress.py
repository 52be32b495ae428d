"""What a long judging says while it works: a header at once (what was found and how it will
be judged), then a progress line with kernels done, rate and time left. `kdiff run`,
`kdiff calibrate` and the pytest plugin (its header) share it. Imports nothing heavy.

On a terminal the progress line is rewritten in place (`\\r`), and redrawn each second; in a
log (not a TTY) it is printed every EVERY_FRACTION of the kernels or every EVERY_SECONDS,
whichever comes first, once at the end, and after HEARTBEAT_SECONDS without a line (a
kernel that takes minutes on a device). A rejected or undecided kernel gets a line of its
own either way. `Heartbeat` is that last rule alone: `kdiff verify` names the gate in work.
"""
from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, TextIO

if TYPE_CHECKING:
    from kdiff.data.model import Verdict

# In a log: a status line per 5% of the kernels (20 over a run), or sooner once 10 s have
# passed since the last, so that a run whose kernels take minutes each gets one per kernel.
EVERY_FRACTION = 0.05
EVERY_SECONDS = 10.0
# On a terminal: the line's seconds change once a second, and so is it redrawn.
TICK_SECONDS = 1.0
# In a log: a line after this long without one, so that a long judging is not silent.
HEARTBEAT_SECONDS = 60.0


@dataclass
class Header:
    """The run as found, before anything is judged: (label, value) pairs, one line."""

    title: str
    fields: list[tuple[str, str]] = field(default_factory=list)

    def add(self, label: str, value: object) -> "Header":
        if value not in (None, ""):
            self.fields.append((label, str(value)))
        return self

    def render(self) -> str:
        return f"{self.title}: " + "; ".join(f"{k} {v}" for k, v in self.fields)


def duration(seconds: float) -> str:
    """'42s', '3m05s', '2h07m'."""
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def status_line(done: int, total: int, elapsed: float, unit: str = "kernels") -> str:
    """'[ 12/77  16%] 3.1 kernels/min, 21m00s left, 3m52s so far'."""
    width = len(str(total))
    pct = 100 * done / total if total else 100
    head = f"[{done:>{width}}/{total} {pct:3.0f}%]"
    if done == 0 or elapsed <= 0:
        return f"{head} started {duration(elapsed)} ago"
    per_min = 60 * done / elapsed
    left = (total - done) * elapsed / done
    rate = f"{per_min:.3g} {unit}/min" if per_min < 1000 else f"{per_min:.0f} {unit}/min"
    tail = f"{duration(left)} left, " if done < total else ""
    return f"{head} {rate}, {tail}{duration(elapsed)} so far"


class Heartbeat:
    """Calls `say` after every `every` seconds (HEARTBEAT_SECONDS by default) in which nothing
    was said (`spoke` tells it something was), on a thread, until `close`."""

    def __init__(self, say: Callable[[], None], every: float | None = None) -> None:
        self.say, self.every = say, HEARTBEAT_SECONDS if every is None else every
        self.last = time.monotonic()
        self._stopped = threading.Event()
        threading.Thread(target=self._beat, daemon=True, name="kdiff-heartbeat").start()

    def spoke(self) -> None:
        self.last = time.monotonic()

    def _beat(self) -> None:
        while not self._stopped.wait(max(0.0, self.last + self.every - time.monotonic())):
            if time.monotonic() - self.last >= self.every:
                self.say()
                self.spoke()

    def close(self) -> None:
        self._stopped.set()


class Progress:
    """Called with each finished verdict; prints the status as described above. On a
    terminal a thread redraws the line every TICK_SECONDS too, so that elapsed time and time
    left move while a long kernel is judged (the first one included); in a log a heartbeat
    prints it after HEARTBEAT_SECONDS of silence."""

    def __init__(self, total: int, stream: TextIO | None = None, tty: bool | None = None,
                 unit: str = "kernels", tick: float | None = TICK_SECONDS,
                 heartbeat: float | None = HEARTBEAT_SECONDS) -> None:  # None: none
        self.total, self.done, self.unit = total, 0, unit
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.start = self.last_line = time.monotonic()
        self.every = max(1, round(total * EVERY_FRACTION))
        self._since_line = 0
        self._drawn = False
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._heartbeat: Heartbeat | None = None
        with self._lock:
            self._status()
        if self.tty and tick:
            threading.Thread(target=self._redraw, args=(tick,), daemon=True,
                             name="kdiff-progress").start()
        if not self.tty and heartbeat:
            self._heartbeat = Heartbeat(self._locked_status, heartbeat)

    def _locked_status(self) -> None:
        with self._lock:
            self._status()

    def _elapsed(self) -> float:
        return time.monotonic() - self.start

    def _redraw(self, tick: float) -> None:
        while not self._stopped.wait(tick):
            with self._lock:
                if self._drawn:
                    self._status()

    def _status(self) -> None:
        line = status_line(self.done, self.total, self._elapsed(), self.unit)
        if self.tty:
            self.stream.write("\r\x1b[2K" + line)
            self._drawn = True
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
        self.last_line, self._since_line = time.monotonic(), 0
        self._spoke()

    def _spoke(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.spoke()

    def _note(self, text: str) -> None:
        if self.tty and self._drawn:
            self.stream.write("\r\x1b[2K")
            self._drawn = False
        self.stream.write(text + "\n")
        self.stream.flush()
        self._spoke()

    def note(self, text: str) -> None:
        """A line of its own above the progress line (what a case's preparation says)."""
        with self._lock:
            self._note(text)

    def __call__(self, verdict: "Verdict") -> None:
        from kdiff.reports.terminal import verdict_line
        with self._lock:
            self.done += 1
            self._since_line += 1
            if verdict.verifier_accept is not True or verdict.error:
                self._note("  " + verdict_line(verdict))
            if (self.tty or self.done == self.total or self._since_line >= self.every
                    or time.monotonic() - self.last_line >= EVERY_SECONDS):
                self._status()

    def close(self) -> None:
        """Stops the redrawing and ends the rewritten line (a terminal); a log already ends
        with a full line."""
        self._stopped.set()
        if self._heartbeat is not None:
            self._heartbeat.close()
        with self._lock:
            if self.tty and self._drawn:
                self.stream.write("\n")
                self.stream.flush()
                self._drawn = False
