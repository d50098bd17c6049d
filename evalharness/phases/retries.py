"""How the harness sends a measuring request to the engine: retried when the failure is transient, counted always.

A night-long matrix meets engines that answer 503 while busy, drop a connection, or stop answering altogether. One
flaky request must not sink a cell, and a cell whose answers mostly failed must not pass as measured. So every phase
that asks the engine something (probes, distribution) goes through a RequestSender, which:
- retries connection failures, resets and 5xx/429 answers with exponential backoff (`retries` times);
- never retries a timeout: the request has already waited `timeouts.request_s`, and a second wait rarely helps;
- counts requests, failures after retries, retries and error kinds in a RequestTally, which the runner compares to
  `requests.max_error_rate` after the phase (kept results, cell marked error above it);
- stops early once `hung_after` requests in a row timed out: the engine is up but no longer answering, and the rest
  of the phase fails at once instead of waiting out a timeout per request.
The sender knows no transport: each attempt is a callable that answers or raises AttemptFailed with a kind. The
phases' attempts go through the `openai` client with its own retries off (phases/openai_api.py), so every attempt is
still seen, counted and classified here.
Throughput never retries (a retried request is not the request that was measured); its errors are counted per kind
by the load client and judged by the same threshold. lm-eval retries its own requests (quality).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, TypeVar

from evalharness.records.measures import RequestTally


class ServerDied(Exception):
    """The engine exited while a phase was talking to it."""


T = TypeVar("T")


class AttemptFailed(Exception):
    """One attempt at a request failed; `kind` names why (http_503, reset, connect_error, timeout, bad_json, ...)."""

    def __init__(self, kind: str, message: str):
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


class RequestFailed(Exception):
    """A request failed after its retries; `kind` names why (http_500, reset, timeout, ...)."""

    def __init__(self, kind: str, message: str):
        super().__init__(f"{kind}: {message}")
        self.kind = kind


def judge_tally(phase: str, tally: RequestTally, max_error_rate: float) -> tuple[str, str] | None:
    """(status, reason) when a phase's failures should mark the cell, else None (pure)."""
    if tally.hung:
        return "timeout", f"the engine stopped answering during {phase}: {tally.describe()}"
    if tally.requests and tally.error_rate() > max_error_rate:
        return "error", (f"{phase}: {tally.describe()}; more than the {max_error_rate:.0%} the matrix allows "
                         "(requests.max_error_rate)")
    return None


def retryable(kind: str) -> bool:
    """Whether another attempt can help: not after a timeout (it already waited request_s), nor after a 4xx other
    than 429 (the request itself is wrong); after anything else (5xx, 429, resets, refused connections, bad JSON),
    yes."""
    if kind == "timeout":
        return False
    if kind.startswith("http_") and kind[5:].isdigit():
        code = int(kind[5:])
        return code >= 500 or code == 429
    return True


class TimeoutStreak:
    """Timeouts in a row: `hung` once `limit` of them came with no answer in between (not thread-safe by itself)."""

    def __init__(self, limit: int | None):
        self.limit = limit
        self.in_a_row = 0
        self.hung = False

    def add(self, timed_out: bool) -> None:
        self.in_a_row = self.in_a_row + 1 if timed_out else 0
        self.hung = self.hung or (self.limit is not None and self.in_a_row >= self.limit)


def map_in_threads(function: Callable[[Any], Any], items: list, concurrency: int) -> list:
    """`function` over `items`, a few at a time, results in order. On an interrupt nothing waits for the requests
    in flight: the server is about to be torn down anyway."""
    pool = ThreadPoolExecutor(max_workers=concurrency)
    try:
        return list(pool.map(function, items))
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


class RequestSender:
    """Runs one phase's requests with retries and tallies them (thread-safe: phases send from a pool)."""

    def __init__(self, *, retries: int, hung_after: int | None = 3, backoff_s: float = 0.5):
        self.retries = retries
        self.backoff_s = backoff_s
        self.tally = RequestTally()
        self._lock = threading.Lock()
        self._streak = TimeoutStreak(hung_after)

    def _count(self, **changes: Any) -> None:
        with self._lock:
            for key, value in changes.items():
                setattr(self.tally, key, getattr(self.tally, key) + value)

    def _failed_attempt(self, kind: str) -> None:
        with self._lock:
            self.tally.kinds[kind] = self.tally.kinds.get(kind, 0) + 1
            self._streak.add(kind == "timeout")
            self.tally.hung = self._streak.hung

    def call(self, attempt: Callable[[], T]) -> T:
        """What `attempt()` answers, trying again after an AttemptFailed that retrying can help (`retryable`);
        RequestFailed after the last try. Every failed attempt is counted by its kind."""
        self._count(requests=1)
        failure = AttemptFailed("skipped", "no attempt was made")
        for number in range(self.retries + 1):
            if self.tally.hung:
                self._count(failed=1)
                raise RequestFailed("skipped", "the engine stopped answering (earlier requests timed out)")
            if number:
                self._count(retried=1)
                time.sleep(self.backoff_s * 2 ** (number - 1))
            try:
                answer = attempt()
            except AttemptFailed as exc:
                failure = exc
            else:
                with self._lock:
                    self._streak.add(False)
                return answer
            self._failed_attempt(failure.kind)
            if not retryable(failure.kind):
                break
        self._count(failed=1)
        raise RequestFailed(failure.kind, failure.message)
