"""The streaming load generator: scenarios of streamed completions at a fixed concurrency or a Poisson request rate,
warm-up first, then measured requests; never retried (a retried request is not the request that was measured).

Every request asks for usage (stream_options.include_usage, continuous_usage_stats) so tokens come from the server
(stats.py); without usage, the engine's /tokenize counts the text. The client is asyncio over its own HTTP/1.1
client (stream_http.py) and the SSE reader (sse.py); benchmarks/client_capacity.py measures its capacity.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any, Callable
from urllib.parse import urlsplit

from evalharness.phases.retries import TimeoutStreak
from evalharness.phases.throughput.eventloop import run_loop
from evalharness.phases.throughput.prompts import PromptSource
from evalharness.phases.throughput.shards import run_sharded
from evalharness.phases.throughput.sse import RequestRecord, SSEReader, StreamState
from evalharness.phases.throughput.stats import summarize
from evalharness.phases.throughput.stream_http import StreamClient, StreamClosed
from evalharness.records.measures import ScenarioResult


class LoadClient:
    """Sends streamed completions to an OpenAI-compatible endpoint and records what arrives, chunk by chunk."""

    def __init__(self, base_url: str, model: str, *, api: str = "completions", timeout_s: float = 300.0,
                 ignore_eos: bool = True, tokenize_url: str | None = None, hung_after: int | None = None,
                 prompts: PromptSource | None = None, extra_body: dict[str, Any] | None = None):
        self.prompts = prompts or PromptSource("random")  # natural text is the scenarios' default (prompts.py)
        # what a client process of a sharded scenario needs to build the same client (shards.py)
        self.settings = dict(base_url=base_url, model=model, api=api, timeout_s=timeout_s, ignore_eos=ignore_eos,
                             tokenize_url=tokenize_url, hung_after=hung_after, prompts=self.prompts,
                             extra_body=extra_body)
        self.extra_body = dict(extra_body or {})  # engine-specific request fields (Engine.load_request_extras)
        self.shards_hung = False
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
        body.update(self.extra_body)
        return body

    async def one(self, http: StreamClient, prompt: str, output_len: int) -> RequestRecord:
        path = "/chat/completions" if self.api == "chat" else "/completions"
        record = RequestRecord(start=time.perf_counter())
        stream = StreamState()
        response = None
        try:
            response = await http.post(path, self.payload(prompt, output_len))
            if response.status != 200:
                record.error = f"http_{response.status}: {(await response.body())[:200].decode(errors='replace')}"
                return record
            # Every read is stamped with the moment its bytes arrived and is one arrival (one chunk), however
            # many events it holds; it is read in the connection's callback, with no task wake-up per read.
            await response.consume(SSEReader(record, stream).feed)
            record.end = record.end or time.perf_counter()
            if stream.done:
                await response.finish(grace_s=1.0)  # the end of the HTTP body, so the connection can be reused
            if stream.error:
                record.error = stream.error
                return record
            if not (stream.done or stream.finished):
                record.error = "truncated: the stream ended before data: [DONE] or a finish_reason"
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
        return self._streak.hung or self.shards_hung

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
                  seed: int = 0, after_warmup: Callable[[], None] | None = None,
                  ) -> tuple[list[RequestRecord], list[RequestRecord]]:
        """(warm-up records, measured records). Concurrency mode keeps N requests in flight; rate mode sends Poisson
        arrivals. Stops after `requests` measured requests, or when `duration_s` has passed (whichever is set).
        `after_warmup` runs once the warm-up requests are done and before the first measured one, with nothing in
        flight: where the engine's own counters are read, so their delta covers exactly the measured requests."""
        session = StreamClient(self.base_url, timeout_s=self.timeout_s)
        try:
            warm = [await self.one(session, self.prompts.prompt(seed + i, input_len), output_len)
                    for i in range(warmup)]
            if after_warmup is not None:
                after_warmup()  # blocking on purpose: no request may start before the counters are read
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
                        self.one(session, self.prompts.prompt(seed + 1000 + issued, input_len), output_len)))
                    issued += 1
                    await asyncio.sleep(rng.expovariate(request_rate))
                measured = list(await asyncio.gather(*tasks))
            else:
                async def worker() -> None:
                    nonlocal issued
                    while more():
                        index = issued
                        issued += 1
                        measured.append(await self.one(session, self.prompts.prompt(seed + 1000 + index, input_len),
                                                       output_len))

                await asyncio.gather(*(worker() for _ in range(concurrency or 1)))
            return warm, measured
        finally:
            session.close()
            if self._tokenizer is not None:
                self._tokenizer.close()
                self._tokenizer = None


def measure_repeat(client: LoadClient, *, repeat: int, concurrency: int | None, request_rate: float | None,
                   input_len: int, output_len: int, requests: int | None, duration_s: float | None, warmup: int,
                   after_warmup: Callable[[], None] | None = None, processes: int = 1) -> list[RequestRecord]:
    """The measured requests of one repeat of a scenario (the warm-up and `after_warmup` first, when given: the
    first repeat of a launch). Each repeat draws its own prompts (seeded by its index: no prefix-cache hits between
    repeats, the same prompts for repeat k in every cell). With `processes` > 1 the measured requests are sharded
    over that many client processes (shards.py); the warm-up and the engine's counters stay in this one."""
    if requests is None and duration_s is None:
        requests = max(8, 4 * (concurrency or 1))
    seed = repeat * (requests or 1000)
    if processes > 1:
        if warmup or after_warmup is not None:
            run_loop(client.run(requests=0, duration_s=None, concurrency=1, request_rate=None, input_len=input_len,
                                output_len=output_len, warmup=warmup, after_warmup=after_warmup))
        measured, hung, _ = run_sharded(type(client), client.settings, processes, requests=requests,
                                        duration_s=duration_s, concurrency=concurrency, request_rate=request_rate,
                                        input_len=input_len, output_len=output_len, seed=seed)
        client.shards_hung = client.shards_hung or hung
        return measured
    _, measured = run_loop(client.run(requests=requests, duration_s=duration_s, concurrency=concurrency,
                                      request_rate=request_rate, input_len=input_len, output_len=output_len,
                                      warmup=warmup, after_warmup=after_warmup, seed=seed))
    return measured


def combine_repeats(name: str, repeats: list[list[RequestRecord]], *, concurrency: int | None,
                    request_rate: float | None, input_len: int, output_len: int, prompts: str | None,
                    rates: list[float] | None = None) -> ScenarioResult:
    """One scenario's record from its repeats' requests (pure): latency percentiles over every request, output tok/s
    the mean of the repeats' own rates (`rates`, default each repeat's), the duration their spans added up (not the
    pauses between them); `repeat_tok_s` keeps each repeat's rate when there is more than one."""
    records = [r for one in repeats for r in one]
    result = summarize(name, records, concurrency=concurrency, request_rate=request_rate, input_len=input_len,
                       output_len=output_len)
    result.prompts = prompts
    if len(repeats) > 1:
        each = [summarize(name, one, concurrency=concurrency, request_rate=request_rate, input_len=input_len,
                          output_len=output_len) for one in repeats]
        rates = rates if rates is not None else [e.output_tok_s for e in each]
        result.repeat_tok_s = [round(r, 3) for r in rates]
        result.output_tok_s = sum(rates) / len(rates)
        result.duration_s = round(sum(e.duration_s for e in each), 4)
    return result


def run_scenario(client: LoadClient, *, name: str, concurrency: int | None, request_rate: float | None,
                 input_len: int, output_len: int, requests: int | None, duration_s: float | None,
                 warmup: int, after_warmup: Callable[[], None] | None = None, repeats: int = 1,
                 processes: int = 1) -> ScenarioResult:
    """One scenario, a fixed number of repeats (the warm-up only before the first): measure_repeat, then
    combine_repeats. The runner's adaptive repeats (runner/speedloop.py) call the two itself."""
    measured: list[list[RequestRecord]] = []
    for repeat in range(max(1, repeats)):
        if repeat and client.hung:
            break  # the engine stopped answering: more repeats would only add timeouts
        measured.append(measure_repeat(client, repeat=repeat, concurrency=concurrency, request_rate=request_rate,
                                       input_len=input_len, output_len=output_len, requests=requests,
                                       duration_s=duration_s, warmup=warmup if repeat == 0 else 0,
                                       after_warmup=after_warmup if repeat == 0 else None, processes=processes))
    return combine_repeats(name, measured, concurrency=concurrency, request_rate=request_rate, input_len=input_len,
                           output_len=output_len, prompts=client.prompts.name)
