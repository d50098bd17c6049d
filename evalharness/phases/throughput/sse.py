"""The load client's hot path: Server-Sent Events read as they arrive, each read stamped and counted as one chunk.

A "chunk" is an arrival: events that came in one socket read arrived at the same moment and count as one (so a client
falling behind shows as larger chunks, not as zero gaps). When every event of a read carries usage (vLLM's
continuous_usage_stats), the token count is read without parsing the JSON; anything else takes the per-line parse.
Without usage, the text is kept so the engine's /tokenize can count it at the end.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

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
    spec_verify_ct: int | None = None  # SGLang's own count of this request's verify steps (sglext.spec_tokens_details)


_COMPLETION_KEY = b'"completion_tokens":'
_COMPLETION_COUNT = re.compile(rb'"completion_tokens":\s*(\d+)')
_PROMPT_COUNT = re.compile(rb'"prompt_tokens":\s*(\d+)')
_DONE = b"data: [DONE]"
_FINISHED = re.compile(rb'"finish_reason":\s*"')  # a reason, not null (a key: model text escapes its quotes)


@dataclass
class StreamState:
    """What one request's stream has told so far, across reads."""

    usage_tokens: int = 0  # the running completion-token count from the server's usage
    # False once text came without a count: the server sends usage only at the end, where it is a total, not tokens
    # that arrived with that event
    counts_known: bool = True
    done: bool = False
    # an event said why the answer ended (finish_reason): the answer is whole even where the server closes the stream
    # without data: [DONE] (transformers serve 5.19 sends its usage with the finish and no [DONE])
    finished: bool = False
    error: str | None = None


class SSEReader:
    """Splits a stream's reads into complete SSE lines and records them (carries the incomplete tail across reads)."""

    def __init__(self, record: RequestRecord, stream: StreamState):
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


def ingest_block(record: RequestRecord, stream: StreamState, block: bytes, now: float) -> None:
    """Record the complete SSE lines of one read, all of which arrived at `now` (the client's hot path).

    Fast path, no JSON parse: when every data event in the block carries usage (vLLM's continuous_usage_stats), the
    tokens that arrived are the last usage count minus the previous one. Sound because model text is JSON-escaped:
    an unescaped `"completion_tokens":` can only be a key, and a raw newline only a line break. Anything else (a
    server without per-chunk usage, an error event, text that happens to contain "data:") takes the per-line parse.
    """
    events = block.count(b"data:")
    # [DONE] ends a stream, so it ends its read: look at the tail only (a [DONE] anywhere else makes the counts below
    # disagree, and the per-line parse finds it)
    done = block.find(_DONE, len(block) - 16) >= 0
    if events and b'"error"' not in block and block.count(_COMPLETION_KEY) == events - done:
        last = _COMPLETION_COUNT.match(block, block.rfind(_COMPLETION_KEY))
        count = int(last.group(1)) if last is not None else -1
        if count >= stream.usage_tokens:
            if count > stream.usage_tokens and stream.counts_known:
                _arrival(record, now, count - stream.usage_tokens)
            stream.usage_tokens = record.completion_tokens = count
            if record.prompt_tokens is None:  # the prompt's count does not change: read it once per request
                prompt = _PROMPT_COUNT.match(block, max(0, block.rfind(b'"prompt_tokens":')))
                if prompt is not None:
                    record.prompt_tokens = int(prompt.group(1))
            stream.done = done
            stream.finished = stream.finished or _FINISHED.search(block) is not None
            return
    _ingest_lines(record, stream, block, now)


def _ingest_lines(record: RequestRecord, stream: StreamState, block: bytes, now: float) -> None:
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
        ext = event.get("sglext")
        if isinstance(ext, dict) and ext.get("spec_tokens_details"):
            details = ext["spec_tokens_details"]  # one object, or a list when n > 1
            details = details[0] if isinstance(details, list) else details
            if isinstance(details, dict) and isinstance(details.get("spec_verify_ct"), int):
                record.spec_verify_ct = details["spec_verify_ct"]
        usage = event.get("usage")
        count = usage.get("completion_tokens") if usage else None
        text = None
        choices = event.get("choices")
        if choices:
            first = choices[0]
            stream.finished = stream.finished or bool(first.get("finish_reason"))
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
