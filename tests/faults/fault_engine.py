"""A fault-injecting engine: the real engine behind an HTTP proxy that misbehaves on purpose (a test tool).

Used as a matrix's `command`, in front of the real one:

    command: [<python>, tests/faults/fault_engine.py, --, <engine python>, -m, vllm.entrypoints.openai.api_server]

The harness launches this script as if it were the engine (it appends --host H --port P and the engine's flags). The
script starts the real engine on a free port of its own, serves a reverse proxy on H:P, and follows the fault rules
in the environment variable EH_FAULTS (JSON). The harness sees exactly what a misbehaving engine would show it: HTTP
errors, resets, stalls, cut streams, altered text, and the engine process dying, in whichever phase a rule targets.
When the engine exits, this script exits with the engine's status, so the harness sees its server die.

With `--upstream URL` before the `--`, the script starts no engine: it proxies to a real engine that is already
serving (the tests start one per session with the same flags, see tests/integration/conftest.py), and it is itself
the process the harness launched: `kill` kills this script (SIGKILL), which is what the harness sees when its
server's launcher dies. A fault matrix then costs no engine start per cell, whatever the machine's speed. The
environment variable EH_UPSTREAM=URL does the same for one cell (an axis value's env): in a matrix whose other cells
start their own engine behind the proxy, a cell whose settings are the running engine's is served by it (no start).

EH_FAULTS = {"seed": 1, "rules": [RULE, ...]}; each request takes the first rule that matches and fires:
    match:  path (exact), body (each key equal, null = absent), has (keys present), skip (let the first N matching
            requests through), times (fire at most N times), per_request (fire at most N times on one request body:
            a retry resends the same body, so N below the client's retries is a fault retries always absorb, whatever
            order the seeded draws fall in), probability (fire at random, seeded), warm (true: only
            a chat request whose last message begins with the same PREFIX_CHARS characters as one the proxy passed
            since the last POST to a cache-flush path, /reset_prefix_cache or /flush_cache: a request that would
            hit the engine's prefix cache; an engine whose cached path is broken, measures/prefix_cache/)
    action: status (answer `code`), reset (close the connection with no answer), stall (wait `seconds` before the
            first byte), stall_mid (forward `after_bytes`, then hang), cut (forward `after_bytes`, then close),
            alter (replace the text of every choice with `text`), think (give every chat answer the reasoning shape
            of a reasoning model: `reasoning_content` set to `reasoning`, the engine's own content kept as the
            answer; with `stop_in_reasoning`, a request that sends `stop` strings, one of which the reasoning holds,
            ends there as vLLM and SGLang end it (vllm-project/vllm#52393, sgl-project/sglang#40529: the stop
            checker runs over every generated token, reasoning included): the reasoning cut before the stop
            string, no content, finish_reason "stop", stop_reason the string), kill (SIGKILL the engine, then drop the request; with --upstream, SIGKILL this script),
            cap (lower the request's max_tokens to `max_tokens` before the engine sees it: a cell whose engine stops
            early, its answers and token counts the engine's own)
Every fired fault is printed to stdout (the server log) as "[fault] ...", and GET /faults returns the counts. With
EH_REQUEST_LOG set to a file, every request is appended to it as "METHOD PATH sha256-of-body" (a count that
outlives the proxy: a resumed cell's proxy is another process).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import signal
import socket
import subprocess
import sys

from aiohttp import ClientSession, ClientTimeout, TCPConnector, web

FLUSH_PATHS = ("/reset_prefix_cache", "/flush_cache")  # vLLM's and SGLang's (serving/engines)
PREFIX_CHARS = 400  # longer than a prompt's own words, shorter than the shared prefixes of measures/prefix_cache
HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "content-encoding"}


def free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def split_engine_argv(argv: list[str]) -> tuple[list[str], str, int]:
    """(the engine's argv with a private port, host, the public port the harness asked for)."""
    engine = list(argv)
    host = engine[engine.index("--host") + 1] if "--host" in engine else "127.0.0.1"
    at = engine.index("--port")
    public = int(engine[at + 1])
    engine[at + 1] = str(free_port(host))
    return engine, host, public


class Rule:
    def __init__(self, spec: dict, rng: random.Random):
        self.spec = spec
        self.match = spec.get("match", {})
        self.action = spec["action"]
        self.rng = rng
        self.seen = 0
        self.fired = 0
        self.fired_on: dict[str, int] = {}  # body digest -> times fired on it (match key per_request)

    def fires(self, path: str, body: dict | None, warm: bool = False, digest: str = "") -> bool:
        m = self.match
        if "path" in m and m["path"] != path:
            return False
        if "warm" in m and m["warm"] != warm:
            return False
        for key, value in (m.get("body") or {}).items():
            if (body or {}).get(key) != value:
                return False
        if any(key not in (body or {}) for key in m.get("has", [])):
            return False
        self.seen += 1
        if self.seen <= m.get("skip", 0):
            return False
        if "times" in m and self.fired >= m["times"]:
            return False
        if "per_request" in m and self.fired_on.get(digest, 0) >= m["per_request"]:
            return False
        if "probability" in m and self.rng.random() >= m["probability"]:
            return False
        self.fired += 1
        self.fired_on[digest] = self.fired_on.get(digest, 0) + 1
        return True


class FaultProxy:
    def __init__(self, upstream: str, rules: list[Rule], engine: subprocess.Popen | None):
        self.upstream = upstream
        self.rules = rules
        self.engine = engine
        self.session: ClientSession | None = None
        self.cached: set[str] = set()  # the prefixes the engine's cache holds since the last flush (rule `warm`)

    def log(self, message: str) -> None:
        print(f"[fault] {message}", flush=True)

    def cache_state(self, method: str, path: str, body: object) -> bool:
        """Whether a request would hit the engine's prefix cache (its last message's first PREFIX_CHARS characters
        seen since the last flush), remembering it; a POST to a flush path empties what is remembered."""
        if method == "POST" and path in FLUSH_PATHS:
            self.cached.clear()
            return False
        messages = body.get("messages") if isinstance(body, dict) else None
        if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
            return False
        key = str(messages[-1].get("content"))[:PREFIX_CHARS]
        warm = key in self.cached
        self.cached.add(key)
        return warm

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.path == "/faults":
            return web.json_response([{"rule": r.spec, "seen": r.seen, "fired": r.fired} for r in self.rules])
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        digest = hashlib.sha256(raw).hexdigest()
        if os.environ.get("EH_REQUEST_LOG"):
            with open(os.environ["EH_REQUEST_LOG"], "a") as handle:
                handle.write(f"{request.method} {request.path} {digest}\n")
        warm = self.cache_state(request.method, request.path, body)
        rule = next((r for r in self.rules
                     if r.fires(request.path, body if isinstance(body, dict) else None, warm, digest)), None)
        action = rule.action if rule else None
        if action:
            self.log(f"{action} on {request.method} {request.path} (rule {self.rules.index(rule)}, "
                     f"fired {rule.fired})")
        if action == "status":
            code = rule.spec.get("code", 500)
            return web.json_response({"error": {"message": f"injected {code}", "code": code}}, status=code)
        if action == "reset":
            request.transport.abort()  # RST where the kernel can, in any case no answer
            raise asyncio.CancelledError
        if action == "kill":
            request.transport.abort()
            if self.engine is None:  # upstream mode: this script is the server the harness launched
                os.kill(os.getpid(), signal.SIGKILL)
            self.engine.send_signal(signal.SIGKILL)
            raise asyncio.CancelledError
        if action == "stall":
            await asyncio.sleep(rule.spec.get("seconds", 3600))
        if action == "cap" and isinstance(body, dict):  # the engine itself stops early: fewer tokens asked of it
            cap = int(rule.spec.get("max_tokens", 16))
            for key in ("max_tokens", "max_completion_tokens"):
                if isinstance(body.get(key), int):
                    body[key] = min(body[key], cap)
            if not any(isinstance(body.get(k), int) for k in ("max_tokens", "max_completion_tokens")):
                body["max_tokens"] = cap
            raw = json.dumps(body).encode()
        assert self.session is not None
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_HEADERS}
        async with self.session.request(request.method, self.upstream + request.path_qs, data=raw,
                                        headers=headers) as upstream:
            out_headers = {k: v for k, v in upstream.headers.items() if k.lower() not in HOP_HEADERS}
            if action == "alter":
                return self._altered(await upstream.read(), upstream.status, out_headers, rule.spec.get("text", ""))
            if action == "think":
                reasoning = rule.spec.get("reasoning", "")
                stops = (body or {}).get("stop") if isinstance(body, dict) else None
                hit = [s for s in (stops if isinstance(stops, list) else [stops] if stops else []) if s in reasoning]
                if rule.spec.get("stop_in_reasoning") and hit:
                    stop = min(hit, key=reasoning.index)
                    return self._stopped(await upstream.read(), upstream.status, out_headers,
                                         reasoning[: reasoning.index(stop)], stop)
                return self._altered(await upstream.read(), upstream.status, out_headers, None, reasoning=reasoning)
            response = web.StreamResponse(status=upstream.status, headers=out_headers)
            await response.prepare(request)
            sent = 0
            limit = rule.spec.get("after_bytes", 0) if action in ("cut", "stall_mid") else None
            async for data in upstream.content.iter_any():
                if limit is not None and sent + len(data) > limit:
                    await response.write(data[: max(0, limit - sent)])
                    if action == "stall_mid":
                        await asyncio.sleep(rule.spec.get("seconds", 3600))
                    request.transport.close()  # cut: the connection ends in the middle of the body
                    raise asyncio.CancelledError
                await response.write(data)
                sent += len(data)
            await response.write_eof()
            return response

    @staticmethod
    def _stopped(data: bytes, status: int, headers: dict, reasoning: str, stop: str) -> web.Response:
        """The answer of an engine whose stop checker matched `stop` in the reasoning: the reasoning up to it, no
        content, finish_reason "stop" with the string as stop_reason (vLLM's field); usage kept from upstream."""
        streamed = data.lstrip().startswith(b"data:")
        usage = None
        for line in data.split(b"\n") if streamed else [b"data: " + data]:
            if line.startswith(b"data:") and line[5:].strip() != b"[DONE]":
                usage = json.loads(line[5:]).get("usage") or usage
        if not streamed:
            message = {"role": "assistant", "content": None, "reasoning_content": reasoning}
            return web.json_response({"object": "chat.completion", "usage": usage, "choices": [
                {"index": 0, "message": message, "finish_reason": "stop", "stop_reason": stop}]}, status=status)
        events = [{"choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": reasoning}}]},
                  {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop", "stop_reason": stop}]},
                  {"choices": [], "usage": usage}]
        body = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
        return web.Response(body=body.encode(), status=status, headers=headers)

    @staticmethod
    def _altered(data: bytes, status: int, headers: dict, text: str | None, reasoning: str | None = None) -> web.Response:
        """Every choice's text replaced by `text` (None: kept); with `reasoning`, chat answers also carry it as
        reasoning_content (in a stream, on the first chunk that has content)."""
        def alter(obj):
            for choice in obj.get("choices") or []:
                if "text" in choice and text is not None:
                    choice["text"] = text
                if isinstance(choice.get("message"), dict):
                    if text is not None:
                        choice["message"]["content"] = text
                    if reasoning is not None:
                        choice["message"]["reasoning_content"] = reasoning
                if isinstance(choice.get("delta"), dict) and choice["delta"].get("content"):
                    if text is not None:
                        choice["delta"]["content"] = text
                    if reasoning is not None and not alter.reasoned:
                        choice["delta"]["reasoning_content"] = reasoning
                        alter.reasoned = True
            return obj

        alter.reasoned = False

        if data.lstrip().startswith(b"data:"):
            lines = []
            for line in data.split(b"\n"):
                if line.startswith(b"data:") and line[5:].strip() != b"[DONE]":
                    line = b"data: " + json.dumps(alter(json.loads(line[5:]))).encode()
                lines.append(line)
            return web.Response(body=b"\n".join(lines), status=status, headers=headers)
        return web.Response(body=json.dumps(alter(json.loads(data))).encode(), status=status, headers=headers)


async def serve(proxy: FaultProxy, host: str, port: int) -> int:
    # a connection per request: a pooled one idle through a stall rule is closed by the engine's server (uvicorn
    # keeps an idle connection 5 s, aiohttp reuses one for 15 s), and the next request on it got "Server
    # disconnected", a 500 the harness counted as the engine's (fault matrix, 5 s stalls, 2026-12-02)
    proxy.session = ClientSession(timeout=ClientTimeout(total=None), auto_decompress=False,
                                  connector=TCPConnector(force_close=True))
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_route("*", "/{tail:.*}", proxy.handle)
    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    loop = asyncio.get_running_loop()
    stop = loop.create_future()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, lambda s=sig: stop.done() or stop.set_result(-s))
    engine = proxy.engine
    while not stop.done() and (engine is None or engine.poll() is None):
        await asyncio.wait([stop], timeout=0.2)
    if engine is None:
        code = stop.result()
    else:
        if stop.done() and engine.poll() is None:
            engine.send_signal(signal.SIGTERM)
        code = await loop.run_in_executor(None, engine.wait)
    await proxy.session.close()
    await runner.cleanup()
    return code


def main() -> int:
    argv = sys.argv[1:]
    own = argv[: argv.index("--")] if "--" in argv else []
    if "--" in argv:
        argv = argv[argv.index("--") + 1:]
    engine_argv, host, public = split_engine_argv(argv)
    config = json.loads(os.environ.pop("EH_FAULTS", "") or "{}")
    rng = random.Random(config.get("seed", 0))
    rules = [Rule(spec, rng) for spec in config.get("rules", [])]
    given = own[own.index("--upstream") + 1] if "--upstream" in own else os.environ.pop("EH_UPSTREAM", "")
    if given:
        upstream, engine = given.rstrip("/"), None
        print(f"[fault] proxy {host}:{public} -> running engine {upstream}; flags given (served there already): "
              f"{json.dumps(engine_argv)}", flush=True)
    else:
        engine = subprocess.Popen(engine_argv)  # same session and group: the harness's teardown reaches it
        upstream = f"http://{host}:{engine_argv[engine_argv.index('--port') + 1]}"
        print(f"[fault] proxy {host}:{public} -> engine pid {engine.pid}", flush=True)
    print(f"[fault] rules: {json.dumps(config.get('rules', []))}", flush=True)
    code = asyncio.run(serve(FaultProxy(upstream, rules, engine), host, public))
    print(f"[fault] {'engine exited' if engine else 'proxy stopped'} with {code}", flush=True)
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main())
