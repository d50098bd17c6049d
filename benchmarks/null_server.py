"""A null OpenAI-compatible streaming server that knows the truth of what it sent.

It does no inference: each request streams `max_tokens` tokens ("tok0 tok1 ..."; one word is one token, so a
tokenizer-based fallback counts them right), `tokens_per_chunk` at a time, at `token_rate` tokens per second per
request (0: as fast as it can, from bytes rendered once per request shape), with usage in the final chunk, and per
chunk when the client asks for continuous_usage_stats (as vLLM does) unless `--no-continuous-usage`. GET /truth
returns what it sent: tokens, first and last chunk times per request, on the server's monotonic clock;
POST /truth/reset clears it.

    python benchmarks/null_server.py --port 8100 --tokens-per-chunk 4 --token-rate 200

With --step-ms S it behaves like an engine's decode loop instead: every S milliseconds each running stream gets its
next event, one socket write per event (what vLLM and SGLang do: one event per stream per step), from bytes rendered
once per request shape so that the server stays cheap (one write per event, no JSON per event); 256 streams at a
2.56 ms step is 100,000 events/s.

With --measure-lag it also watches its own event loop (a 2 ms sleep, over and over) and reports the worst lateness in
/truth as `worst_lag_s`: on a busy machine the server stamps arrivals and paces chunks late too, and a test comparing a
client with this truth must allow for both processes' lateness. Off by default: the wake-ups cost CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

from aiohttp import web


class NullServer:
    def __init__(self, tokens_per_chunk: int, token_rate: float, continuous_usage: bool, send_usage: bool,
                 burst: int = 1, step_ms: float = 0.0, measure_lag: bool = False):
        self.measure_lag = measure_lag
        self.worst_lag_s = 0.0
        self.step_ms = step_ms
        self._stepping: list[list] = []  # [transport, writes, next index, done future, record] per running stream
        self._ticker: asyncio.Task | None = None
        self.burst = burst  # chunks per socket write when token_rate is 0: keeps the server cheaper than any client
        self.tokens_per_chunk = tokens_per_chunk
        self.token_rate = token_rate
        self.continuous_usage = continuous_usage
        self.send_usage = send_usage
        self.requests: list[dict] = []
        self._rendered: dict[tuple, list[bytes]] = {}

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/completions", self.completions)
        app.router.add_post("/v1/chat/completions", self.completions)
        app.router.add_get("/v1/models", self.models)
        app.router.add_get("/health", self.health)
        app.router.add_get("/truth", self.truth)
        app.router.add_post("/truth/reset", self.reset)
        app.router.add_post("/tokenize", self.tokenize)
        if self.measure_lag:
            app.on_startup.append(self._start_lag_watch)
        return app

    async def _start_lag_watch(self, app: web.Application) -> None:
        async def watch() -> None:
            while True:
                begin = time.monotonic()
                await asyncio.sleep(0.002)
                self.worst_lag_s = max(self.worst_lag_s, time.monotonic() - begin - 0.002)

        app["lag_watch"] = asyncio.get_running_loop().create_task(watch())

    async def health(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "null", "object": "model"}]})

    async def tokenize(self, request: web.Request) -> web.Response:
        body = await request.json()
        count = len(str(body.get("prompt", "")).split())
        return web.json_response({"count": count, "tokens": list(range(count))})

    async def truth(self, request: web.Request) -> web.Response:
        done = [r for r in self.requests if r["last"] is not None]
        tokens = sum(r["tokens"] for r in done)
        span = (max(r["last"] for r in done) - min(r["arrived"] for r in done)) if done else 0.0
        return web.json_response({"requests": len(done), "tokens": tokens, "span_s": span,
                                  "output_tok_s": tokens / span if span else 0.0, "per_request": done,
                                  "worst_lag_s": self.worst_lag_s})

    async def reset(self, request: web.Request) -> web.Response:
        self.requests = []
        self.worst_lag_s = 0.0
        return web.json_response({"ok": True})

    async def completions(self, request: web.Request) -> web.StreamResponse:
        arrived = time.monotonic()
        body = await request.json()
        chat = request.path.endswith("/chat/completions")
        total = int(body.get("max_tokens") or 16)
        prompt_tokens = len(str(body.get("prompt") or body.get("messages") or "").split())
        options = body.get("stream_options") or {}
        continuous = self.send_usage and self.continuous_usage and bool(options.get("continuous_usage_stats"))
        record = {"arrived": arrived, "first": None, "last": None, "tokens": 0, "total": total}
        self.requests.append(record)
        if not body.get("stream"):
            text = " ".join(f"tok{i}" for i in range(total))
            record.update(first=time.monotonic(), last=time.monotonic(), tokens=total)
            return web.json_response({"choices": [{"index": 0, "text": text, "finish_reason": "length"}],
                                      "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": total}})
        if self.step_ms > 0:
            return await self._stream_stepped(request, record, total, prompt_tokens, chat, continuous,
                                              bool(self.send_usage and options.get("include_usage")))
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        if self.token_rate <= 0:
            return await self._stream_prerendered(response, record, total, prompt_tokens, chat, continuous,
                                                  bool(self.send_usage and options.get("include_usage")))
        sent = 0
        start = time.monotonic()
        pending: list[bytes] = []
        while sent < total:
            k = min(self.tokens_per_chunk, total - sent)
            if self.token_rate > 0:
                due = start + (sent + k) / self.token_rate
                delay = due - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
            text = "".join(f" tok{sent + i}" for i in range(k))
            sent += k
            choice = {"index": 0, "delta": {"content": text}} if chat else {"index": 0, "text": text}
            chunk: dict = {"object": "chat.completion.chunk" if chat else "text_completion", "choices": [choice]}
            if continuous:
                chunk["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": sent}
            pending.append(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            if self.token_rate > 0 or len(pending) >= self.burst or sent >= total:
                await response.write(b"".join(pending))
                pending = []
            now = time.monotonic()
            record["first"] = record["first"] or now
            record["last"] = now
            record["tokens"] = sent
        if self.send_usage and options.get("include_usage"):
            final = {"choices": [], "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": sent}}
            await response.write(b"data: " + json.dumps(final).encode() + b"\n\n")
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


    def _render(self, total: int, prompt_tokens: int, chat: bool, continuous: bool, final_usage: bool,
                burst: int) -> list[bytes]:
        key = (total, prompt_tokens, chat, continuous, final_usage, burst)
        writes = self._rendered.get(key)
        if writes is None:
            events = []
            for sent in range(1, total + 1):
                text = f" tok{sent - 1}"
                choice = {"index": 0, "delta": {"content": text}} if chat else {"index": 0, "text": text}
                chunk: dict = {"object": "chat.completion.chunk" if chat else "text_completion", "choices": [choice]}
                if continuous:
                    chunk["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": sent}
                events.append(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            if final_usage:
                final = {"choices": [], "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": total}}
                events.append(b"data: " + json.dumps(final).encode() + b"\n\n")
            events.append(b"data: [DONE]\n\n")
            writes = [b"".join(events[i:i + burst]) for i in range(0, len(events), burst)]
            self._rendered[key] = writes
        return writes

    async def _stream_stepped(self, request: web.Request, record: dict, total: int, prompt_tokens: int, chat: bool,
                              continuous: bool, final_usage: bool) -> web.StreamResponse:
        """Engine-like: the ticker writes this stream's next event at every step, straight to the socket (the body
        has a Content-Length, so no chunked framing per write)."""
        writes = self._render(total, prompt_tokens, chat, continuous, final_usage, 1)
        # the usage event and [DONE] go out with the last token's event, as engines send them together
        writes = [*writes[:total - 1], b"".join(writes[total - 1:])]
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        response.content_length = sum(len(w) for w in writes)
        await response.prepare(request)
        writer = getattr(response, "_payload_writer", None)
        if writer is not None and hasattr(writer, "send_headers"):
            writer.send_headers()  # aiohttp buffers the headers until the first body write; ours bypass it
        done = asyncio.get_running_loop().create_future()
        self._stepping.append([request.transport, writes, 0, done, record])
        if self._ticker is None or self._ticker.done():
            self._ticker = asyncio.create_task(self._tick())
        await done
        await response.write_eof()
        return response

    async def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        step = self.step_ms / 1000
        due = loop.time()
        while self._stepping:
            now = time.monotonic()
            running = []
            for stream in self._stepping:
                transport, writes, index, done, record = stream
                if transport is None or transport.is_closing():
                    done.set_result(None) if not done.done() else None
                    continue
                transport.write(writes[index])
                record["first"] = record["first"] or now
                record["last"] = now
                record["tokens"] = min(index + 1, record.get("total", 10**9))
                stream[2] = index + 1
                if index + 1 == len(writes):
                    done.set_result(None)
                else:
                    running.append(stream)
            self._stepping = running
            due += step
            await asyncio.sleep(max(0.0, due - loop.time()))
            if loop.time() - due > 10 * step:
                due = loop.time()  # far behind (the server itself is the bottleneck): do not burst to catch up

    async def _stream_prerendered(self, response: web.StreamResponse, record: dict, total: int, prompt_tokens: int,
                                  chat: bool, continuous: bool, final_usage: bool) -> web.StreamResponse:
        """As fast as it can: the same bytes as the paced path, rendered once per shape and written `burst` events
        at a time, so that the server costs far less per token than any client (the capacity benchmark needs the
        client to be the bottleneck)."""
        writes = self._render(total, prompt_tokens, chat, continuous, final_usage, self.burst)
        record["first"] = time.monotonic()
        for data in writes:
            await response.write(data)
        record["last"] = time.monotonic()
        record["tokens"] = total
        await response.write_eof()
        return response


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8100)
    parser.add_argument("--tokens-per-chunk", type=int, default=1)
    parser.add_argument("--token-rate", type=float, default=0.0, help="tokens/s per request; 0 = as fast as possible")
    parser.add_argument("--no-continuous-usage", action="store_true", help="usage only in the final chunk")
    parser.add_argument("--no-usage", action="store_true", help="no usage at all (clients must tokenize)")
    parser.add_argument("--burst", type=int, default=1, help="chunks per write when --token-rate is 0")
    parser.add_argument("--step-ms", type=float, default=0.0, help="engine-like: one event per stream per step")
    parser.add_argument("--measure-lag", action="store_true", help="report the server's own worst loop lateness")
    args = parser.parse_args()
    server = NullServer(args.tokens_per_chunk, args.token_rate, not args.no_continuous_usage, not args.no_usage,
                        args.burst, args.step_ms, args.measure_lag)
    web.run_app(server.app(), host=args.host, port=args.port, print=None, access_log=None)


if __name__ == "__main__":
    main()
