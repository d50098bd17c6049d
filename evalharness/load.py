"""The streaming load generator and its statistics: tokens counted from the server's usage, latency per token.

Speculative decoding sends several tokens in one streamed chunk, so counting chunks overstates nothing less than the
speed itself, and timing one gap per chunk overstates inter-token latency by the acceptance length. Here:
- output tokens come from the server's usage (stream_options.include_usage), and per chunk from
  continuous_usage_stats where the engine sends it (vLLM does); where a chunk's own count is unknown, the request's
  usage total is spread evenly over its chunks; without usage, the engine's /tokenize counts the text; never the chunks;
- a chunk carrying k tokens after a gap g contributes k inter-token gaps of g/k; the first chunk's tokens belong to
  the time to first token; a "chunk" is an arrival: events that came in one socket read arrived at the same moment
  and count as one (so a client falling behind shows as larger chunks, not as zero gaps);
- TPOT is (end-to-end - TTFT) / (tokens after the first chunk), and per-request decode tokens/s is its inverse.
The client is asyncio with its own HTTP/1.1 streaming client (stream_http.py) and an SSE reader that, when every
event carries usage, reads the count without parsing the JSON (benchmarks/ measures its capacity).
"""

from __future__ import annotations

import asyncio
import math
import random
import re
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import orjson
from pydantic import BaseModel

from evalharness.retries import TimeoutStreak
from evalharness.stream_http import StreamClient, StreamClosed

_loads = orjson.loads


@dataclass
class RequestRecord:
    """One streamed request as the client saw it."""

    start: float
    end: float = 0.0
    ok: bool = False
    error: str | None = None
    ttft: float | None = None
    chunk_times: list[float] = field(default_factory=list)
    chunk_tokens: list[int | None] = field(default_factory=list)  # per-chunk count where the server said
    text_parts: list[str] = field(default_factory=list)
    completion_tokens: int | None = None  # from the final usage
    prompt_tokens: int | None = None
    token_source: str = "usage"


class Percentiles(BaseModel):
    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None


class ScenarioResult(BaseModel):
    name: str
    concurrency: int | None = None
    request_rate: float | None = None
    input_len: int
    output_len: int
    requests: int
    completed: int
    errors: dict[str, int] = {}
    duration_s: float
    output_tokens: int
    prompt_tokens: int | None = None
    output_tok_s: float  # aggregate: all output tokens over the wall time of the measured requests
    request_decode_tok_s: Percentiles  # per request: tokens after the first chunk over their time (single-stream figure)
    ttft_s: Percentiles
    tpot_s: Percentiles
    itl_s: Percentiles
    e2e_s: Percentiles
    token_sources: dict[str, int] = {}
    tokens_per_chunk: float | None = None  # per arrival: events that came in one read count as one chunk
    engine: dict[str, Any] = {}  # the engine's own figures for this scenario, e.g. speculative acceptance


def percentiles(values: list[float]) -> Percentiles:
    """Mean and nearest-rank-interpolated percentiles (numpy's default 'linear' method)."""
    if not values:
        return Percentiles()
    ordered = sorted(values)

    def at(q: float) -> float:
        pos = (len(ordered) - 1) * q
        low, high = math.floor(pos), math.ceil(pos)
        return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)

    return Percentiles(mean=sum(ordered) / len(ordered), p50=at(0.5), p90=at(0.9), p99=at(0.99))


def chunk_token_counts(record: RequestRecord) -> list[int] | None:
    """Tokens per content chunk: the server's own per-chunk counts, or the usage total spread evenly (pure)."""
    n = len(record.chunk_times)
    if n == 0:
        return []
    if all(k is not None for k in record.chunk_tokens) and len(record.chunk_tokens) == n:
        return [int(k) for k in record.chunk_tokens]  # type: ignore[arg-type]
    total = record.completion_tokens
    if total is None:
        return None
    base, extra = divmod(total, n)
    return [base + (1 if i < extra else 0) for i in range(n)]


def request_timings(record: RequestRecord, counts: list[int]) -> tuple[list[float], float | None, float | None]:
    """(inter-token gaps, TPOT, decode tokens/s) of one request: a chunk of k tokens after gap g gives k gaps of g/k."""
    gaps: list[float] = []
    for i in range(1, len(record.chunk_times)):
        k = counts[i]
        if k <= 0:
            continue
        gap = record.chunk_times[i] - record.chunk_times[i - 1]
        gaps.extend([gap / k] * k)
    after_first = sum(counts[1:])
    if after_first <= 0 or record.ttft is None:
        return gaps, None, None
    decode_time = (record.end - record.start) - record.ttft
    if decode_time <= 0:
        return gaps, None, None
    return gaps, decode_time / after_first, after_first / decode_time


def summarize(name: str, records: list[RequestRecord], *, concurrency: int | None, request_rate: float | None,
              input_len: int, output_len: int) -> ScenarioResult:
    """Statistics of the measured (non-warm-up) requests of one scenario (pure)."""
    done = [r for r in records if r.ok]
    errors: dict[str, int] = {}
    for r in records:
        if not r.ok:
            kind = (r.error or "unknown").split(":", 1)[0]
            errors[kind] = errors.get(kind, 0) + 1
    ttfts, tpots, itls, e2es, decode_rates = [], [], [], [], []
    output_tokens = 0
    prompt_tokens = 0
    chunks = 0
    sources: dict[str, int] = {}
    for r in done:
        counts = chunk_token_counts(r) or []
        tokens = r.completion_tokens if r.completion_tokens is not None else sum(counts)
        output_tokens += tokens
        prompt_tokens += r.prompt_tokens or 0
        chunks += len(r.chunk_times)
        sources[r.token_source] = sources.get(r.token_source, 0) + 1
        if r.ttft is not None:
            ttfts.append(r.ttft)
        e2es.append(r.end - r.start)
        if counts:
            gaps, tpot, rate = request_timings(r, counts)
            itls.extend(gaps)
            if tpot is not None:
                tpots.append(tpot)
                decode_rates.append(rate)
    if records:
        span = max(r.end for r in records) - min(r.start for r in records)
    else:
        span = 0.0
    return ScenarioResult(
        name=name, concurrency=concurrency, request_rate=request_rate, input_len=input_len, output_len=output_len,
        requests=len(records), completed=len(done), errors=errors, duration_s=round(span, 4),
        output_tokens=output_tokens, prompt_tokens=prompt_tokens or None,
        output_tok_s=output_tokens / span if span > 0 else 0.0,
        request_decode_tok_s=percentiles(decode_rates), ttft_s=percentiles(ttfts), tpot_s=percentiles(tpots),
        itl_s=percentiles(itls), e2e_s=percentiles(e2es), token_sources=sources,
        tokens_per_chunk=output_tokens / chunks if chunks else None,
    )


def synthetic_prompt(input_len: int, seed: int) -> str:
    """About `input_len` tokens of varied common words (one word is about one token for most tokenizers)."""
    words = ("time person year way day thing man world life hand part child eye woman place work week case point "
             "number group problem fact river stone light music paper garden window").split()
    rng = random.Random(seed)
    return " ".join(rng.choice(words) for _ in range(max(1, input_len)))


_COMPLETION_KEY = b'"completion_tokens":'
_COMPLETION_COUNT = re.compile(rb'"completion_tokens":\s*(\d+)')
_PROMPT_COUNT = re.compile(rb'"prompt_tokens":\s*(\d+)')


@dataclass
class _StreamState:
    """What one request's stream has told so far, across reads."""

    usage_tokens: int = 0  # the running completion-token count from the server's usage
    # False once text came without a count: the server sends usage only at the end, where it is a total, not tokens
    # that arrived with that event
    counts_known: bool = True
    done: bool = False
    error: str | None = None


class _SSEReader:
    """Splits a stream's reads into complete SSE lines and records them (carries the incomplete tail across reads)."""

    def __init__(self, record: RequestRecord, stream: _StreamState):
        self.record = record
        self.stream = stream
        self.buffer = b""

    def feed(self, now: float, data: bytes) -> bool:
        buffer = self.buffer + data if self.buffer else data
        cut = buffer.rfind(b"\n")
        if cut < 0:
            self.buffer = buffer
            return False
        self.buffer = buffer[cut + 1:]
        ingest_block(self.record, self.stream, buffer[: cut + 1], now)
        if self.stream.done or self.stream.error is not None:
            self.record.end = now  # the last byte's arrival, not the moment the waiting task next runs
            return True
        return False


def _arrival(record: RequestRecord, now: float, tokens: int | None) -> None:
    """One chunk: what one read brought (`tokens` None when the server did not count them)."""
    if record.ttft is None:
        record.ttft = now - record.start
    record.chunk_times.append(now)
    record.chunk_tokens.append(tokens)


def _is_done(block: bytes) -> bool:
    # A newline inside model text is escaped in JSON, so a raw one followed by the marker starts a real line.
    return block.startswith(b"data: [DONE]") or b"\ndata: [DONE]" in block


def ingest_block(record: RequestRecord, stream: _StreamState, block: bytes, now: float) -> None:
    """Record the complete SSE lines of one read, all of which arrived at `now` (the client's hot path).

    Fast path, no JSON parse: when every data event in the block carries usage (vLLM's continuous_usage_stats), the
    tokens that arrived are the last usage count minus the previous one. Sound because model text is JSON-escaped:
    an unescaped `"completion_tokens":` can only be a key, and a raw newline only a line break. Anything else (a
    server without per-chunk usage, an error event, text that happens to contain "data:") takes the per-line parse.
    """
    events = block.count(b"data:")
    done = _is_done(block)
    if events and b'"error"' not in block and block.count(_COMPLETION_KEY) == events - done:
        last = _COMPLETION_COUNT.match(block, block.rfind(_COMPLETION_KEY))
        count = int(last.group(1)) if last is not None else -1
        if count >= stream.usage_tokens:
            if count > stream.usage_tokens and stream.counts_known:
                _arrival(record, now, count - stream.usage_tokens)
            stream.usage_tokens = record.completion_tokens = count
            prompt = _PROMPT_COUNT.match(block, max(0, block.rfind(b'"prompt_tokens":')))
            if prompt is not None:
                record.prompt_tokens = int(prompt.group(1))
            stream.done = done
            return
    _ingest_lines(record, stream, block, now)


def _ingest_lines(record: RequestRecord, stream: _StreamState, block: bytes, now: float) -> None:
    """The general path: parse each data event; what the block's events carried becomes one chunk."""
    arrived = 0
    arrived_known = True
    texts: list[str] = []
    for line in block.split(b"\n"):
        if line[:5] != b"data:":
            continue  # blank separators, comments (": keep-alive"), event names
        payload = line[5:].strip()
        if payload == b"[DONE]":
            stream.done = True
            break
        event = _loads(payload)
        if not isinstance(event, dict):
            raise ValueError(f"an event that is not a JSON object: {payload[:80]!r}")
        if event.get("error"):
            error = event["error"]
            message = error.get("message") if isinstance(error, dict) else error
            stream.error = f"stream_error: {str(message)[:200]}"
            break
        usage = event.get("usage")
        count = usage.get("completion_tokens") if usage else None
        text = None
        choices = event.get("choices")
        if choices:
            first = choices[0]
            text = first.get("text")
            if text is None:
                delta = first.get("delta")
                text = delta.get("content") if delta else None
        if count is not None:
            if count > stream.usage_tokens and stream.counts_known:
                arrived += count - stream.usage_tokens
            stream.usage_tokens = record.completion_tokens = max(count, stream.usage_tokens)
        elif text:
            arrived_known = stream.counts_known = False
        if text:
            texts.append(text)
        if usage and usage.get("prompt_tokens") is not None:
            record.prompt_tokens = usage["prompt_tokens"]
    if arrived or texts:
        _arrival(record, now, arrived if arrived_known else None)
        if not arrived_known:
            record.text_parts.extend(texts)  # only needed if the tokenizer must count at the end


class LoadClient:
    """Sends streamed completions to an OpenAI-compatible endpoint and records what arrives, chunk by chunk."""

    def __init__(self, base_url: str, model: str, *, api: str = "completions", timeout_s: float = 300.0,
                 ignore_eos: bool = True, tokenize_url: str | None = None, hung_after: int | None = None):
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api = api
        self.timeout_s = timeout_s
        self.ignore_eos = ignore_eos
        self.tokenize_url = tokenize_url
        # this many timeouts in a row mean the engine stopped answering: no new requests are sent after them
        self._streak = TimeoutStreak(hung_after)
        self._tokenizer: StreamClient | None = None  # opened on first need (servers without usage)

    def payload(self, prompt: str, output_len: int) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model, "max_tokens": output_len, "temperature": 0.0, "stream": True,
            "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        }
        if self.ignore_eos:
            body["ignore_eos"] = True  # vLLM and SGLang honour it; others ignore unknown fields or refuse (recorded)
        if self.api == "chat":
            body["messages"] = [{"role": "user", "content": prompt}]
        else:
            body["prompt"] = prompt
        return body

    async def one(self, http: StreamClient, prompt: str, output_len: int) -> RequestRecord:
        path = "/chat/completions" if self.api == "chat" else "/completions"
        record = RequestRecord(start=time.perf_counter())
        stream = _StreamState()
        response = None
        try:
            response = await http.post(path, self.payload(prompt, output_len))
            if response.status != 200:
                record.error = f"http_{response.status}: {(await response.body())[:200].decode(errors='replace')}"
                return record
            # Every read is stamped with the moment its bytes arrived and is one arrival (one chunk), however
            # many events it holds; it is read in the connection's callback, with no task wake-up per read.
            await response.consume(_SSEReader(record, stream).feed)
            record.end = record.end or time.perf_counter()
            if stream.done:
                await response.finish(grace_s=1.0)  # the end of the HTTP body, so the connection can be reused
            if stream.error:
                record.error = stream.error
                return record
            if not stream.done:
                record.error = "truncated: the stream ended before data: [DONE]"
                return record
            if record.completion_tokens is None:
                record.completion_tokens = await self._count_with_tokenizer("".join(record.text_parts))
                record.token_source = "tokenizer"
            if record.completion_tokens is None:
                record.error = "no_token_count: the server sent no usage and has no /tokenize endpoint"
                return record
            record.ok = True
        except asyncio.TimeoutError:
            record.error = "timeout: no answer within the request timeout"
        except StreamClosed as exc:
            record.error = str(exc)
        except OSError as exc:
            record.error = f"connect_error: {exc}"
        except ValueError as exc:
            record.error = f"bad_chunk: {exc}"
        finally:
            if not record.end:
                record.end = time.perf_counter()
            if response is not None:
                response.close()
            self._streak.add(record.error is not None and record.error.startswith("timeout"))
        return record

    @property
    def hung(self) -> bool:
        return self._streak.hung

    async def _count_with_tokenizer(self, text: str) -> int | None:
        if not self.tokenize_url:
            return None
        parts = urlsplit(self.tokenize_url)
        if self._tokenizer is None:
            self._tokenizer = StreamClient(f"{parts.scheme}://{parts.netloc}", timeout_s=self.timeout_s)
        try:
            response = await self._tokenizer.post(parts.path, {"model": self.model, "prompt": text,
                                                               "add_special_tokens": False})
            try:
                if response.status != 200:
                    return None
                data = await response.json()
            finally:
                response.close()
            return data.get("count") if "count" in data else len(data.get("tokens", []))
        except (asyncio.TimeoutError, StreamClosed, OSError, ValueError):
            return None

    async def run(self, *, requests: int | None, duration_s: float | None, concurrency: int | None,
                  request_rate: float | None, input_len: int, output_len: int, warmup: int = 1,
                  seed: int = 0) -> tuple[list[RequestRecord], list[RequestRecord]]:
        """(warm-up records, measured records). Concurrency mode keeps N requests in flight; rate mode sends Poisson
        arrivals. Stops after `requests` measured requests, or when `duration_s` has passed (whichever is set)."""
        session = StreamClient(self.base_url, timeout_s=self.timeout_s)
        try:
            warm = [await self.one(session, synthetic_prompt(input_len, seed + i), output_len) for i in range(warmup)]
            total = requests if requests is not None else 10**9
            deadline = time.perf_counter() + duration_s if duration_s else None
            measured: list[RequestRecord] = []
            issued = 0

            def more() -> bool:
                return issued < total and not self.hung and (deadline is None or time.perf_counter() < deadline)

            if request_rate:
                rng = random.Random(seed)
                tasks = []
                while more():
                    tasks.append(asyncio.create_task(
                        self.one(session, synthetic_prompt(input_len, seed + 1000 + issued), output_len)))
                    issued += 1
                    await asyncio.sleep(rng.expovariate(request_rate))
                measured = list(await asyncio.gather(*tasks))
            else:
                async def worker() -> None:
                    nonlocal issued
                    while more():
                        index = issued
                        issued += 1
                        measured.append(await self.one(session, synthetic_prompt(input_len, seed + 1000 + index),
                                                       output_len))

                await asyncio.gather(*(worker() for _ in range(concurrency or 1)))
            return warm, measured
        finally:
            session.close()
            if self._tokenizer is not None:
                self._tokenizer.close()
                self._tokenizer = None


def run_loop(coroutine):
    """The client's event loop. Plain asyncio on purpose: uvloop (about 15% less CPU per token here) swallows an
    exception raised by a signal handler ("Exception in callback Loop._read_from_self"), so Ctrl-C or SIGTERM during
    a scenario would be lost instead of tearing the server down."""
    return asyncio.run(coroutine)


def run_scenario(client: LoadClient, *, name: str, concurrency: int | None, request_rate: float | None,
                 input_len: int, output_len: int, requests: int | None, duration_s: float | None,
                 warmup: int) -> ScenarioResult:
    if requests is None and duration_s is None:
        requests = max(8, 4 * (concurrency or 1))
    _, measured = run_loop(client.run(requests=requests, duration_s=duration_s, concurrency=concurrency,
                                         request_rate=request_rate, input_len=input_len, output_len=output_len,
                                         warmup=warmup))
    return summarize(name, measured, concurrency=concurrency, request_rate=request_rate, input_len=input_len,
                     output_len=output_len)
