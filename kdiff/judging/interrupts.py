"""Ctrl-C while threads wait on futures: the judge's pools (kdiff run's executor, kdiff tune's
side-by-side judges) turn SIGINT into an event and raise it themselves between two waits."""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def deferred_sigint() -> Iterator[threading.Event]:
    """SIGINT sets the event instead of raising KeyboardInterrupt wherever the main thread is.
    Raised inside concurrent.futures.wait, it can leave the waiter's lock half released
    ("RuntimeError: release unlocked lock"), and the interrupted run lost its report."""
    event = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield event  # signal handlers belong to the main thread
        return
    previous = signal.signal(signal.SIGINT, lambda *_: event.set())
    try:
        yield event
    finally:
        signal.signal(signal.SIGINT, previous)
