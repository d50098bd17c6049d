"""How the harness sends a measuring request to the engine: retried when the failure is transient, counted always.

A night-long matrix meets engines that answer 503 while busy, drop a connection, or stop answering altogether. One
flaky request must not sink a cell, and a cell whose answers mostly failed must not pass as measured. So every phase
that asks the engine something (probes, distribution) goes through `post_json`, which:
- retries connection failures, resets and 5xx/429 answers with exponential backoff (`retries` times);
- never retries a timeout: the request has already waited `timeouts.request_s`, and a second wait rarely helps;
- counts requests, failures after retries, retries and error kinds in a RequestTally, which the runner compares to
  `requests.max_error_rate` after the phase (kept results, cell marked error above it);
- stops early once `hung_after` requests in a row timed out: the engine is up but no longer answering, and the rest
  of the phase fails at once instead of waiting out a timeout per request.
Throughput never retries (a retried request is not the request that was measured); its errors are counted per kind
by the load client and judged by the same threshold. lm-eval retries its own requests (quality).
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import httpx

from evalharness.records.measures import RequestTally


class ServerDied(Exception):
    """The engine exited while a phase was talking to it."""


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


def _kind(exc: Exception) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return "timeout"
    if isinstance(exc, httpx.ConnectError):
        return "connect_error"
    if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)):
        return "reset"
    return type(exc).__name__


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
    """Sends JSON POSTs with retries for one phase and tallies them (thread-safe: phases send from a pool)."""

    def __init__(self, client: httpx.Client, *, retries: int, hung_after: int = 3, backoff_s: float = 0.5):
        self.client = client
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

    def post_json(self, url: str, body: dict[str, Any]) -> Any:
        """The decoded JSON answer of a 200, or RequestFailed after the retries."""
        self._count(requests=1)
        for attempt in range(self.retries + 1):
            if self.tally.hung:
                self._count(failed=1)
                raise RequestFailed("skipped", "the engine stopped answering (earlier requests timed out)")
            if attempt:
                self._count(retried=1)
                time.sleep(self.backoff_s * 2 ** (attempt - 1))
            try:
                response = self.client.post(url, json=body)
            except httpx.HTTPError as exc:
                kind, message = _kind(exc), str(exc) or type(exc).__name__
            else:
                if response.status_code == 200:
                    try:
                        data = response.json()
                    except ValueError as exc:
                        kind, message = "bad_json", str(exc)
                    else:
                        with self._lock:
                            self._streak.add(False)
                        return data
                else:
                    kind, message = f"http_{response.status_code}", response.text[:200]
                    if response.status_code < 500 and response.status_code != 429:
                        self._failed_attempt(kind)
                        self._count(failed=1)
                        raise RequestFailed(kind, message)  # the request itself is wrong: retrying cannot help
            self._failed_attempt(kind)
            if kind == "timeout":
                break
        self._count(failed=1)
        raise RequestFailed(kind, message)
