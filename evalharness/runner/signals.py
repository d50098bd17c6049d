"""Signals during a run: SIGINT, SIGTERM and SIGHUP become Interrupted, deferred while a teardown or the final save
runs, so a second Ctrl-C cannot leave an engine behind. Owns nothing else; imports nothing of evalharness."""

from __future__ import annotations

import contextlib
import signal
from typing import Iterator


class Interrupted(Exception):
    """The harness received SIGINT, SIGTERM or SIGHUP."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


INTERRUPTS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class _Interrupts:
    """Turns SIGINT, SIGTERM and SIGHUP into Interrupted, except while deferred (teardown, the final save): then the
    signal is remembered and raised afterwards, so a second Ctrl-C cannot cut a teardown short and leave an engine
    behind. A flag, not a signal mask: Python runs handlers in the main thread whichever thread the kernel picked."""

    def __init__(self) -> None:
        self.deferring = 0
        self.pending: int | None = None

    def handler(self, signum: int, frame: object) -> None:
        if self.deferring:
            self.pending = self.pending or signum
            return
        raise Interrupted(signum)

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        # Installed explicitly for SIGINT too: a harness started in the background of a non-interactive shell (as in
        # CI) inherits SIGINT ignored, and Python then never raises KeyboardInterrupt.
        previous = {sig: signal.signal(sig, self.handler) for sig in INTERRUPTS}
        try:
            yield
        finally:
            for sig, old in previous.items():
                signal.signal(sig, old)

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        self.deferring += 1
        try:
            yield
        finally:
            self.deferring -= 1

    def raise_pending(self) -> None:
        if self.pending is not None and not self.deferring:
            signum, self.pending = self.pending, None
            raise Interrupted(signum)


INTERRUPT = _Interrupts()
