"""One lm-eval request as the harness sends it: journaled, streamed, and judged by its stream; imported by
phases/_lmeval_models.py only (it runs in the lm-eval worker's process).

Journal. With sampling on, lm-eval bypasses its own request cache, so a retried or resumed task would regenerate
every answer (hours of a reasoning model). Every finished request is appended to the task's journal
(requests.jsonl: one JSON line per request, its key and the engine's answer as the non-streaming API gives it) the
moment its answer is complete; a later attempt, or the resumed run, answers each request it finds there from the
journal and sends only the others. The key is the sha256 of the request's payload (prompt, sampling settings and
per-request seed included; the endpoint's address is not in it), so a kept answer is reused only for exactly the
request that produced it, and a kept answer gives back exactly the sample it gave before.

Stream. A reasoning chain of 32k tokens outlives any whole-request wall clock that a stalled server should also
trip. Generation requests are streamed and judged by silence instead: the first byte and each next one must come
within the request timeout (aiohttp's sock_read), however long the whole answer takes. The streamed chunks are put
back together into the answer the non-streaming endpoint would have given (content, reasoning, finish_reason, the
engine's matched stop, usage), which is what lm-eval parses and what the journal keeps. Loglikelihood requests (echo,
one token) are not streamed.

Failures. Each failed attempt of a request is appended to request_failures.jsonl (key, error); lm-eval's tenacity
retry sends it again. The worker's summary counts them (_lmeval_results.py).

Must not import lm-eval (the models module owns that) or anything of the harness outside phases/.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import aiohttp

STOP_KEYS = ("stop_reason", "matched_stop")  # vLLM's and SGLang's name for the stop string or token that ended it


def request_key(payload: dict[str, Any]) -> str:
    """The journal's key of one request: sha256 of its payload as JSON with sorted keys."""
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


class Journal:
    """The finished requests of one task folder (shared by every attempt and by a resume), and its failure log."""

    def __init__(self, path: str | None, failures_path: str | None):
        self.path = Path(path) if path else None
        self.failures_path = Path(failures_path) if failures_path else None
        self.answers: dict[str, Any] = {}
        self.replayed = 0
        if self.path is not None and self.path.exists():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    entry = json.loads(line)
                    self.answers[entry["key"]] = entry["output"]
                except (ValueError, KeyError, TypeError):
                    continue  # the last line of an attempt that was killed while writing it

    def get(self, key: str) -> Any | None:
        output = self.answers.get(key)
        if output is not None:
            self.replayed += 1
        return output

    def keep(self, key: str, output: Any) -> None:
        self.answers[key] = output
        if self.path is not None:
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps({"key": key, "output": output}, ensure_ascii=False) + "\n")
                handle.flush()

    def failed(self, key: str, error: BaseException) -> None:
        if self.failures_path is not None:
            with open(self.failures_path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps({"key": key, "error": f"{type(error).__name__}: {error}"[:500]}) + "\n")


class StreamError(Exception):
    """The engine sent an error inside the stream, or ended it without a finished answer."""


def _merge_choice(into: dict[str, Any], delta_choice: dict[str, Any], chat: bool) -> None:
    if chat:
        message = into.setdefault("message", {"role": "assistant", "content": None})
        delta = delta_choice.get("delta") or {}
        for field in ("content", "reasoning_content", "reasoning"):
            piece = delta.get(field)
            if isinstance(piece, str):
                message[field] = (message.get(field) or "") + piece
    else:
        piece = delta_choice.get("text")
        if isinstance(piece, str):
            into["text"] = into.get("text", "") + piece
    if delta_choice.get("finish_reason") is not None:
        into["finish_reason"] = delta_choice["finish_reason"]
    for key in STOP_KEYS:
        if delta_choice.get(key) is not None:
            into[key] = delta_choice[key]


def assemble(events: list[dict[str, Any]], chat: bool) -> dict[str, Any]:
    """The non-streaming answer that a list of streamed events stands for (pure). Role-only first chunks, separate
    finish chunks (SGLang) and a final usage-only chunk are all taken as they come."""
    choices: dict[int, dict[str, Any]] = {}
    usage = None
    ident = None
    for event in events:
        if "error" in event and not event.get("choices"):
            raise StreamError(f"the engine sent an error in the stream: {json.dumps(event['error'])[:300]}")
        ident = ident or event.get("id")
        for delta_choice in event.get("choices") or []:
            index = delta_choice.get("index", 0)
            _merge_choice(choices.setdefault(index, {"index": index}), delta_choice, chat)
        if event.get("usage"):
            usage = event["usage"]
    if not choices or any(c.get("finish_reason") is None for c in choices.values()):
        raise StreamError("the stream ended before the answer was finished (no finish_reason)")
    out: dict[str, Any] = {"id": ident, "object": "chat.completion" if chat else "text_completion",
                           "choices": [choices[i] for i in sorted(choices)]}
    if chat:
        for choice in out["choices"]:
            message = choice["message"]
            for field in ("reasoning_content", "reasoning"):
                if field in message and not message[field]:
                    del message[field]
    if usage is not None:
        out["usage"] = usage
    return out


def streaming(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload as sent when streamed: usage at the end, so the answer keeps its token counts."""
    return {**payload, "stream": True, "stream_options": {"include_usage": True}}


async def send(session: aiohttp.ClientSession, url: str, headers: dict[str, str], payload: dict[str, Any], *,
               silence_s: float, stream: bool, chat: bool) -> Any:
    """One request; the answer as the non-streaming endpoint gives it. Raises on an HTTP error, on `silence_s`
    without a byte (to the first byte, or between two), and on a stream that ends unfinished."""
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=silence_s, sock_read=silence_s)
    body = streaming(payload) if stream else payload
    async with session.post(url, json=body, headers=headers, timeout=timeout) as response:
        if not response.ok:
            text = await response.text()
            raise aiohttp.ClientResponseError(response.request_info, response.history, status=response.status,
                                              message=f"{response.reason}: {text[:300]}", headers=response.headers)
        if not stream:
            return await response.json(content_type=None)
        events = []
        async for raw in response.content:  # one line at a time, each read within silence_s
            line = raw.strip()
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if data == b"[DONE]":
                break
            events.append(json.loads(data))
        return assemble(events, chat)
