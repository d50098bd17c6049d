"""The load generator's HTTP/1.1 client: streamed POSTs over pooled keep-alive connections, each read stamped with
the moment its bytes arrived. Used on the throughput hot path only; the probes and distribution scoring go through
the openai client (phases/openai_api.py), readiness and the engines' own endpoints through httpx.

Measured (benchmarks/README.md, `benchmarks/client_capacity.py`, 2 shared cores): at an engine's pace (one event per
stream per step, one per socket write) 11.4-11.9 us of CPU per event at 13,600 events/s over 64 streams, against
22.2-22.9 for vLLM's benchmark client (1.9-2.0x), and 1.2-1.5x at up to 100,000 events/s over 256 streams; within
0.03% of the true token rate. (When a server packs 64 events per write: 0.38 us per event, 9.8x; engines do not write
so.)

Why not aiohttp here: its stream reader runs about eight Python calls for every HTTP chunk a server writes, and an
engine writes one chunk per streamed event, so at one token per event the client itself becomes the bottleneck
(benchmarks/client_capacity.py measures it). Here the parsing is httptools (llhttp, the parser of uvicorn and
Node.js): the only Python work per HTTP chunk is one callback that appends the bytes, and a whole socket read is
handed on as one block with the time it arrived. What this client does not do, on purpose: redirects, proxies,
cookies, compression, HTTP/2. Engines' OpenAI-compatible endpoints need none of them.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections import deque
from typing import AsyncIterator, Callable
from urllib.parse import urlsplit

import httptools
import orjson


READ_BUFFER = 64 * 1024  # one read's worth: a burst of a few hundred events


class StreamClosed(Exception):
    """The connection ended before the response did (reset, closed mid-stream, unparseable bytes)."""


class _Connection(asyncio.BufferedProtocol):
    """One TCP (or TLS) connection; parses responses as they arrive and queues (arrival time, body bytes).

    A buffered protocol: the event loop reads into a buffer we hand it. A plain Protocol gets a new bytes object per
    read, which asyncio allocates at 256 KiB and shrinks; at one event per read that allocation was more than half of
    the client's CPU per event, most of it in the kernel (benchmarks/client_capacity.py, paced regime: 9-14 us of
    system time per event before, 3-5 after). The buffer is shared by a client's connections: the loop fills it and
    hands it on (buffer_updated) in one synchronous step, and the parser copies out what it keeps."""

    def __init__(self, buffer: bytearray | None = None) -> None:
        self._buffer = buffer if buffer is not None else bytearray(READ_BUFFER)
        self._view = memoryview(self._buffer)
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.reads: deque[tuple[float, bytes]] = deque()
        self.parts: list[bytes] = []
        self.status: int | None = None
        self.complete = False
        self.keep_alive = False
        self.until_close = False  # a body with neither length nor chunking ends when the server closes
        self.failure: BaseException | None = None
        self.waiter: asyncio.Future | None = None
        self.received_any = False
        # Where reads go as they arrive, in the protocol callback itself (no task wake-up per read: at one event per
        # read that wake-up is most of the client's cost). Returns True once it has seen all it needs.
        self.sink: Callable[[float, bytes], bool] | None = None
        self.sink_satisfied = False

    # asyncio.BufferedProtocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def get_buffer(self, sizehint: int) -> bytearray:
        return self._buffer

    def buffer_updated(self, nbytes: int) -> None:
        self.data_received(self._view[:nbytes])

    def data_received(self, data: bytes | memoryview) -> None:
        now = time.perf_counter()
        self.received_any = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self.failure = StreamClosed(f"bad_http: {exc}")
        if self.parts:
            block = b"".join(self.parts) if len(self.parts) > 1 else self.parts[0]
            self.parts = []
            if self.sink is None:
                self.reads.append((now, block))
            elif not self.sink_satisfied:
                self._feed_sink(now, block)
                if not (self.sink_satisfied or self.complete or self.failure):
                    return  # nothing for the waiting task to do yet
        self._wake()

    def _feed_sink(self, now: float, block: bytes) -> None:
        try:
            self.sink_satisfied = bool(self.sink(now, block))  # type: ignore[misc]
        except Exception as exc:  # the sink's own error (a malformed event) ends the exchange with it
            self.failure = exc
            self.keep_alive = False

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.complete and self.failure is None:
            if self.until_close and exc is None:
                self.complete = True
            else:
                self.failure = StreamClosed(f"connection_lost: {exc or 'the server closed the connection'}")
        self.keep_alive = False
        self._wake()

    # httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        if name.lower() in (b"content-length", b"transfer-encoding"):
            self.until_close = False

    def on_message_begin(self) -> None:
        self.until_close = True

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        self.keep_alive = self.parser.should_keep_alive()
        self._wake()

    def on_body(self, body: bytes) -> None:
        self.parts.append(body)

    def on_message_complete(self) -> None:
        self.complete = True

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    def fail(self, failure: BaseException) -> None:
        self.failure = failure
        self.keep_alive = False
        self._wake()

    async def wait(self) -> None:
        self.waiter = asyncio.get_running_loop().create_future()
        try:
            await self.waiter
        finally:
            self.waiter = None

    def reset_for_next(self) -> None:
        self.reads.clear()
        self.status = None
        self.complete = False
        self.received_any = False
        self.sink = None
        self.sink_satisfied = False


class StreamResponse:
    """A response being received. `reads()` yields (arrival time, body bytes) per socket read."""

    def __init__(self, client: "StreamClient", connection: _Connection, deadline_handle: asyncio.TimerHandle):
        self._client = client
        self._connection = connection
        self._deadline = deadline_handle
        self.status: int = connection.status or 0

    async def reads(self) -> AsyncIterator[tuple[float, bytes]]:
        connection = self._connection
        connection.sink = None
        while True:
            if connection.reads:
                yield connection.reads.popleft()
                continue
            if connection.failure is not None:
                raise connection.failure
            if connection.complete:
                return
            await connection.wait()

    async def consume(self, sink: Callable[[float, bytes], bool]) -> None:
        """Hand every read, as it arrives, to `sink(arrival time, bytes)`, until the body ends, the connection fails
        (raised here, as is an exception from the sink), or the sink returns True."""
        connection = self._connection
        connection.sink = sink
        while connection.reads and not connection.sink_satisfied:
            connection._feed_sink(*connection.reads.popleft())
        while not connection.sink_satisfied:
            if connection.failure is not None:
                raise connection.failure
            if connection.complete:
                return
            await connection.wait()

    async def finish(self, grace_s: float) -> None:
        """Read what remains of the body (after the last event, normally just the end of the chunked encoding), for
        at most `grace_s`; a response that does not end then leaves its connection closed instead of reused."""
        try:
            await asyncio.wait_for(self._drain(), grace_s)
        except (asyncio.TimeoutError, StreamClosed):
            pass

    async def _drain(self) -> None:
        async for _ in self.reads():
            pass

    async def body(self) -> bytes:
        return b"".join([block async for _, block in self.reads()])

    async def json(self):
        return orjson.loads(await self.body())

    def close(self) -> None:
        """Give the connection back to the pool when the response ended cleanly, else close it."""
        self._deadline.cancel()
        self._client._release(self._connection)


class StreamClient:
    """Streamed POSTs to one origin (scheme, host, port) over a pool of keep-alive connections."""

    def __init__(self, base_url: str, *, timeout_s: float, headers: dict[str, str] | None = None):
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.ssl = ssl.create_default_context() if parts.scheme == "https" else None
        self.prefix = parts.path.rstrip("/")
        self.timeout_s = timeout_s
        host_header = self.host if parts.port is None else f"{self.host}:{self.port}"
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        self._head = (f"Host: {host_header}\r\nUser-Agent: evalharness\r\nAccept: */*\r\n"
                      f"Content-Type: application/json\r\n{extra}").encode("latin-1")
        self._idle: list[_Connection] = []
        self._buffer = bytearray(READ_BUFFER)  # shared by this client's connections (see _Connection)

    async def post(self, path: str, payload: dict) -> StreamResponse:
        """Send the request and wait for the response's status and headers. Raises asyncio.TimeoutError, OSError
        (connect), StreamClosed. The timeout covers the whole exchange, reading the body included."""
        body = orjson.dumps(payload)
        request = (f"POST {self.prefix}{path} HTTP/1.1\r\n".encode("latin-1") + self._head
                   + f"Content-Length: {len(body)}\r\n\r\n".encode("latin-1") + body)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        for attempt in (0, 1):
            connection = self._pooled()
            reused = connection is not None
            if connection is None:
                connection = await asyncio.wait_for(self._connect(), max(0.0, deadline - loop.time()))
            handle = loop.call_at(deadline, connection.fail, asyncio.TimeoutError())
            connection.transport.write(request)  # type: ignore[union-attr]
            try:
                while connection.status is None:
                    if connection.failure is not None:
                        raise connection.failure
                    await connection.wait()
            except StreamClosed:
                handle.cancel()
                self._discard(connection)
                # a pooled connection the server had already closed: the request never reached it, send it again
                if reused and not connection.received_any and attempt == 0:
                    continue
                raise
            except BaseException:
                handle.cancel()
                self._discard(connection)
                raise
            return StreamResponse(self, connection, handle)
        raise AssertionError("unreachable")

    def _pooled(self) -> _Connection | None:
        while self._idle:
            candidate = self._idle.pop()
            if candidate.failure is None and not candidate.transport.is_closing():  # type: ignore[union-attr]
                return candidate
            self._discard(candidate)
        return None

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        _, connection = await loop.create_connection(lambda: _Connection(self._buffer), self.host, self.port,
                                                     ssl=self.ssl)
        return connection

    def _release(self, connection: _Connection) -> None:
        if connection.complete and connection.keep_alive and connection.failure is None \
                and not connection.transport.is_closing():  # type: ignore[union-attr]
            connection.reset_for_next()
            self._idle.append(connection)
        else:
            self._discard(connection)

    @staticmethod
    def _discard(connection: _Connection) -> None:
        if connection.transport is not None:
            connection.transport.close()

    def close(self) -> None:
        while self._idle:
            self._discard(self._idle.pop())
