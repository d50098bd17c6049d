"""The load generator's HTTP client against raw sockets that misbehave on purpose: what the real engine cannot be
made to do on demand (close a pooled connection, cut a body, stall, answer garbage). The real-engine paths are in
tests/integration."""

import asyncio

import pytest

from evalharness.phases.throughput.stream_http import StreamClient, StreamClosed


def _chunked(*parts: bytes) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\n\r\n"


OK_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


async def _serve(handler):
    """A one-off TCP server; `handler(reader, writer, n)` answers the n-th connection."""
    count = 0

    async def on_connect(reader, writer):
        nonlocal count
        count += 1
        try:
            await handler(reader, writer, count)
        finally:
            writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{port}/v1", lambda: count


async def _read_request(reader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
    return head + await reader.readexactly(length)


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 20))


def test_a_streamed_body_arrives_in_reads_and_the_connection_is_reused():
    async def handler(reader, writer, n):
        while True:
            try:
                request = await _read_request(reader)
            except asyncio.IncompleteReadError:
                return
            assert request.startswith(b"POST /v1/completions HTTP/1.1\r\n")
            writer.write(OK_HEAD + _chunked(b"data: 1\n\n", b"data: 2\n\n"))
            await writer.drain()

    async def main():
        server, url, connections = await _serve(handler)
        client = StreamClient(url, timeout_s=5)
        bodies = []
        for _ in range(3):
            response = await client.post("/completions", {"x": 1})
            assert response.status == 200
            bodies.append(await response.body())
            response.close()
        client.close()
        server.close()
        return bodies, connections()

    bodies, connections = run(main())
    assert bodies == [b"data: 1\n\ndata: 2\n\n"] * 3 and connections == 1


def test_a_pooled_connection_the_server_closed_is_replaced_without_an_error():
    async def handler(reader, writer, n):
        await _read_request(reader)
        # answer, then close although the response said keep-alive (servers' idle timeouts do this)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()

    async def main():
        server, url, connections = await _serve(handler)
        client = StreamClient(url, timeout_s=5)
        results = []
        for _ in range(2):
            response = await client.post("/completions", {})
            results.append(await response.body())
            response.close()
            await asyncio.sleep(0.1)
        client.close()
        server.close()
        return results, connections()

    results, connections = run(main())
    assert results == [b"ok", b"ok"] and connections == 2


@pytest.mark.parametrize("behaviour,expected", [
    ("cut", StreamClosed),        # the body stops in the middle and the connection closes
    ("garbage", StreamClosed),    # not HTTP at all
    ("stall", asyncio.TimeoutError),  # headers, then nothing
])
def test_a_broken_response_is_an_error_not_a_success(behaviour, expected):
    async def handler(reader, writer, n):
        await _read_request(reader)
        if behaviour == "cut":
            writer.write(OK_HEAD + b"9\r\ndata: 1\n\n\r\n" + b"20\r\ndata: ")
        elif behaviour == "garbage":
            writer.write(b"SSH-2.0-OpenSSH\r\n\r\n")
        else:
            writer.write(OK_HEAD)
            await writer.drain()
            await asyncio.sleep(5)
        await writer.drain()

    async def main():
        server, url, _ = await _serve(handler)
        client = StreamClient(url, timeout_s=1.0)
        try:
            response = await client.post("/completions", {})
            await response.body()
        finally:
            client.close()
            server.close()

    with pytest.raises(expected):
        run(main())


def test_nobody_listening_is_an_os_error():
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    async def main():
        await StreamClient(f"http://127.0.0.1:{port}/v1", timeout_s=2).post("/completions", {})

    with pytest.raises(OSError):
        run(main())


def test_only_http_urls_are_accepted():
    with pytest.raises(ValueError, match="not an http"):
        StreamClient("ftp://example.com/v1", timeout_s=1)
