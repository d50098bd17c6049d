"""The streaming load generator and its statistics: tokens counted from the server's usage, latency per token.

Speculative decoding sends several tokens in one streamed chunk, so counting chunks overstates nothing less than the
speed itself, and timing one gap per chunk overstates inter-token latency by the acceptance length. Here:
- output tokens come from the server's usage (stream_options.include_usage), and per chunk from
  continuous_usage_stats where the engine sends it (vLLM does); where a chunk's own count is unknown, the request's
  usage total is spread evenly over its chunks; without usage, the engine's /tokenize counts the text; never the chunks;
- a chunk carrying k tokens after a gap g contributes k inter-token gaps of g/k; the first chunk's tokens belong to
  the time to first token;
- TPOT is (end-to-end - TTFT) / (tokens after the first chunk), and per-request decode tokens/s is its inverse.
The client is asyncio + aiohttp with a hand-rolled SSE line reader (benchmarks/ measures its capacity).
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from pydantic import BaseModel

import orjson

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
    tokens_per_chunk: float | None = None
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


class LoadClient:
    """Sends streamed completions to an OpenAI-compatible endpoint and records what arrives, chunk by chunk."""

    def __init__(self, base_url: str, model: str, *, api: str = "completions", timeout_s: float = 300.0,
                 ignore_eos: bool = True, tokenize_url: str | None = None):
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api = api
        self.timeout_s = timeout_s
        self.ignore_eos = ignore_eos
        self.tokenize_url = tokenize_url

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

    async def one(self, session: aiohttp.ClientSession, prompt: str, output_len: int) -> RequestRecord:
        url = f"{self.base_url}/chat/completions" if self.api == "chat" else f"{self.base_url}/completions"
        record = RequestRecord(start=time.perf_counter())
        previous_usage = 0
        try:
            async with session.post(url, json=self.payload(prompt, output_len)) as response:
                if response.status != 200:
                    record.error = f"http_{response.status}: {(await response.text())[:200]}"
                    return record
                # Read whatever bytes arrived and split the events ourselves: line-by-line reads cost more than
                # the parsing. Every event in one read arrived at the same moment, and is stamped so.
                buffer = b""
                done = False
                async for data in response.content.iter_any():
                    now = time.perf_counter()
                    buffer += data
                    *lines, buffer = buffer.split(b"\n")
                    for line in lines:
                        if line[:5] != b"data:":
                            continue
                        payload = line[5:].strip()
                        if payload == b"[DONE]":
                            done = True
                            break
                        previous_usage = self._event(record, _loads(payload), now, previous_usage)
                    if done:
                        break
            record.end = time.perf_counter()
            if record.completion_tokens is None:
                record.completion_tokens = await self._count_with_tokenizer(session, "".join(record.text_parts))
                record.token_source = "tokenizer"
            if record.completion_tokens is None:
                record.error = "no_token_count: the server sent no usage and has no /tokenize endpoint"
                return record
            record.ok = True
        except asyncio.TimeoutError:
            record.error = "timeout: no answer within the request timeout"
        except aiohttp.ClientError as exc:
            record.error = f"{type(exc).__name__}: {exc}"
        except ValueError as exc:
            record.error = f"bad_chunk: {exc}"
        finally:
            if not record.end:
                record.end = time.perf_counter()
        return record

    @staticmethod
    def _event(record: RequestRecord, chunk: dict[str, Any], now: float, previous_usage: int) -> int:
        """Record one streamed event; returns the running completion-token count from usage. (The hot path of the
        client: one call per chunk, kept to the few lookups it needs.)"""
        usage = chunk.get("usage")
        choices = chunk.get("choices")
        if choices:
            first = choices[0]
            text = first.get("text")
            if text is None:
                delta = first.get("delta")
                text = delta.get("content") if delta else None
            if text:
                if record.ttft is None:
                    record.ttft = now - record.start
                record.chunk_times.append(now)
                count = usage.get("completion_tokens") if usage else None
                if count is None:
                    record.chunk_tokens.append(None)
                    record.text_parts.append(text)  # only needed if the tokenizer must count at the end
                else:
                    record.chunk_tokens.append(count - previous_usage)
        if usage:
            count = usage.get("completion_tokens")
            if count is not None:
                previous_usage = record.completion_tokens = count
            record.prompt_tokens = usage.get("prompt_tokens", record.prompt_tokens)
        return previous_usage

    async def _count_with_tokenizer(self, session: aiohttp.ClientSession, text: str) -> int | None:
        if not self.tokenize_url:
            return None
        try:
            async with session.post(self.tokenize_url, json={"model": self.model, "prompt": text,
                                                             "add_special_tokens": False}) as response:
                if response.status != 200:
                    return None
                data = await response.json()
                return data.get("count") if "count" in data else len(data.get("tokens", []))
        except (aiohttp.ClientError, ValueError):
            return None

    async def run(self, *, requests: int | None, duration_s: float | None, concurrency: int | None,
                  request_rate: float | None, input_len: int, output_len: int, warmup: int = 1,
                  seed: int = 0) -> tuple[list[RequestRecord], list[RequestRecord]]:
        """(warm-up records, measured records). Concurrency mode keeps N requests in flight; rate mode sends Poisson
        arrivals. Stops after `requests` measured requests, or when `duration_s` has passed (whichever is set)."""
        limit = max(1, (concurrency or 0) or 256)
        connector = aiohttp.TCPConnector(limit=limit + 8, force_close=False)
        timeout = aiohttp.ClientTimeout(total=self.timeout_s)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
            warm = [await self.one(session, synthetic_prompt(input_len, seed + i), output_len) for i in range(warmup)]
            total = requests if requests is not None else 10**9
            deadline = time.perf_counter() + duration_s if duration_s else None
            measured: list[RequestRecord] = []
            issued = 0

            def more() -> bool:
                return issued < total and (deadline is None or time.perf_counter() < deadline)

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
