"""A cell's OpenAI-compatible API for the phases off the load generator's hot path (garbage probes, distribution
scoring), through the `openai` client, so that a user's OPENAI_* conventions (OPENAI_API_KEY, OPENAI_CUSTOM_HEADERS,
OPENAI_LOG, proxies from the environment) behave as they expect. The load generator keeps its own HTTP client
(phases/throughput/stream_http.py); lm-eval keeps its own clients (quality).

The client is a transport only: `max_retries=0` and one timeout (`timeouts.request_s`, on connect, read, write and
pool alike, as before). Retries, the tally and the timed-out-in-a-row streak stay the harness's (RequestSender in
phases/retries.py), so every attempt is seen and classified there; `attempt` maps the client's exceptions back to
the kinds the harness has always recorded:

    openai.APIStatusError                                   http_<status>  (retried on 5xx and 429 only)
    openai.APITimeoutError                                  timeout        (never retried)
    openai.APIConnectionError, by its __cause__:
        ConnectError                                        connect_error
        RemoteProtocolError, ReadError, WriteError          reset
        a TimeoutException                                  timeout
        any other transport error                           its class name
    a 200 whose body is not JSON                            bad_json
openai 3.x sends through httpx2, earlier versions (and a legacy `httpx.Client` given as http_client) through httpx:
the causes are matched in both families, whose exception classes share their names and hierarchy.

Where it sends: base_url is always the cell's server (plan.base_url), never OPENAI_BASE_URL: the harness serves its
own endpoint and must measure that one. The API key is OPENAI_API_KEY when it is set (an external endpoint that
checks one), else a placeholder (local engines check none); it travels only in the client's Authorization header.
No record keeps it: answers, error messages (the body of an error answer, the transport's own message) and tallies
never hold request headers, and records/masking.py still masks launch settings whose names say key or token.
OPENAI_API_KEY is sent to whatever endpoint the matrix names, an `external` one included.

Answers are the client's typed objects, read by attribute (choices, message.content, finish_reason,
usage.completion_tokens, text, logprobs.text_offset / tokens / top_logprobs). All of these are declared fields of
openai's types, and the client builds its objects without validating them, so the engine's values arrive unchanged:
vLLM's null top_logprobs entry at the first echoed position, finish reasons outside openai's Literal. The fields
engines add (vLLM's prompt_logprobs, stop_reason, ...) survive in `model_extra`; none is read.

Cost, measured on the 2-core development machine while another test suite ran (so loosely; best of 9 x 300 requests
against a local stdlib server): importing openai takes about 0.46 s on top of httpx and pydantic (0.1 s for httpx
alone); it is imported with the runner's cell phases only, not by `bench`, `validate` or the load generator. A chat
completion round trip through the client takes about 1.2-1.3 ms against 0.5 ms with httpx.Client.post + .json(),
so about 0.8 ms of the client's own work per request (building the request, constructing the typed answer; the
same with a legacy httpx.Client under it, so not the transport): nothing next to an engine's answer, and these
phases send tens to hundreds of requests per cell.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, TypeVar

import httpx
import httpx2
import openai
from openai.types import Completion
from openai.types.chat import ChatCompletion

from evalharness.phases.retries import AttemptFailed, RequestSender
from evalharness.records.measures import RequestTally

PLACEHOLDER_KEY = "EMPTY"  # what vLLM's and SGLang's own examples pass when the server checks no key
T = TypeVar("T")


def _both(name: str) -> tuple[type[Exception], ...]:
    return getattr(httpx, name), getattr(httpx2, name)


_TIMEOUT = _both("TimeoutException")
_CONNECT = _both("ConnectError")
_RESET = _both("RemoteProtocolError") + _both("ReadError") + _both("WriteError")


def connection_kind(cause: BaseException | None) -> str:
    """The kind of a failure below HTTP (the transport's exception under openai.APIConnectionError)."""
    if isinstance(cause, _TIMEOUT):
        return "timeout"
    if isinstance(cause, _CONNECT):
        return "connect_error"
    if isinstance(cause, _RESET):
        return "reset"
    return type(cause).__name__ if cause is not None else "connection_error"


def _message(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def attempt(create: Callable[..., T], params: dict[str, Any]) -> T:
    """One call of an openai `create`, its failure raised as AttemptFailed with the harness's kind."""
    try:
        answer = create(**params)
    except openai.APIStatusError as exc:
        raise AttemptFailed(f"http_{exc.status_code}", exc.response.text[:200]) from exc
    except openai.APITimeoutError as exc:  # before APIConnectionError, which it is a kind of
        raise AttemptFailed("timeout", _message(exc.__cause__ or exc)) from exc
    except openai.APIConnectionError as exc:
        raise AttemptFailed(connection_kind(exc.__cause__), _message(exc.__cause__ or exc)) from exc
    except ValueError as exc:  # a 200 declared JSON whose body does not parse
        raise AttemptFailed("bad_json", str(exc)) from exc
    if not isinstance(answer, openai.BaseModel):  # a 200 that is not JSON at all: the client hands back its text
        raise AttemptFailed("bad_json", f"the answer is not JSON: {str(answer)[:200]!r}")
    return answer


@dataclass
class StreamedChat:
    """A streamed chat answer put together: its content, its tool calls by index ({"function": {"name",
    "arguments"}}), its finish reason (handed through `attempt` inside _Streamed, an openai model)."""

    content: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None


def streamed_chat(client: openai.OpenAI, params: dict[str, Any]) -> openai.BaseModel:
    """One streamed chat completion read to its end: content pieces joined, each tool call's name and argument
    pieces joined by its index (the OpenAI stream's shape, vLLM's and SGLang's alike)."""
    content: list[str] = []
    calls: dict[int, dict[str, str]] = {}
    finish = None
    try:
        for chunk in client.chat.completions.create(stream=True, **params):
            for choice in chunk.choices or []:
                delta = choice.delta
                content.append(getattr(delta, "content", None) or "")
                for call in getattr(delta, "tool_calls", None) or []:
                    slot = calls.setdefault(call.index, {"name": "", "arguments": ""})
                    function = getattr(call, "function", None)
                    slot["name"] += (getattr(function, "name", None) or "") if not slot["name"] else ""
                    slot["arguments"] += getattr(function, "arguments", None) or ""
                finish = choice.finish_reason or finish
    except httpx.HTTPError as exc:  # the body cut mid-stream
        raise AttemptFailed("stream_cut", _message(exc)) from exc
    except openai.APIError as exc:  # an error event inside a 200 stream: vLLM sends a refused request's 400 so
        code = (exc.body or {}).get("code") if isinstance(exc.body, dict) else None
        kind = f"http_{code}" if isinstance(code, int) else "stream_error"
        raise AttemptFailed(kind, exc.message[:200]) from exc
    joined = StreamedChat(content="".join(content) or None, finish_reason=finish,
                          tool_calls=[{"function": calls[i]} for i in sorted(calls)])
    return _Streamed(answer=joined)


class _Streamed(openai.BaseModel):
    answer: Any


def make_client(base_url: str, timeout_s: float, http_client: httpx.Client | httpx2.Client | None = None
                ) -> openai.OpenAI:
    """A transport-only client for the cell's server: no retries of its own, one timeout for every stage. The key is
    the user's OPENAI_API_KEY or a placeholder; base_url is always the cell's (OPENAI_BASE_URL is never used)."""
    return openai.OpenAI(base_url=base_url, api_key=os.environ.get("OPENAI_API_KEY") or PLACEHOLDER_KEY,
                         max_retries=0, timeout=timeout_s, http_client=http_client)


class Endpoint:
    """One phase's requests to a cell's OpenAI-compatible API: each retried, counted and classified by a
    RequestSender (thread-safe: the phases send from a pool). Close it (or use `with`) when the phase is done."""

    def __init__(self, base_url: str, timeout_s: float, *, retries: int, hung_after: int | None = 3,
                 backoff_s: float = 0.5, http_client: httpx.Client | httpx2.Client | None = None):
        self.client = make_client(base_url, timeout_s, http_client)
        self.sender = RequestSender(retries=retries, hung_after=hung_after, backoff_s=backoff_s)

    @property
    def tally(self) -> RequestTally:
        return self.sender.tally

    def chat(self, **params: Any) -> ChatCompletion:
        """chat.completions.create(**params) with the harness's retries (RequestFailed after the last)."""
        return self.sender.call(lambda: attempt(self.client.chat.completions.create, params))

    def chat_streamed(self, **params: Any) -> StreamedChat:
        """chat.completions.create(stream=True), read to its end and put together, with the harness's retries (a
        stream cut short is an attempt that failed)."""
        return self.sender.call(lambda: attempt(lambda **p: streamed_chat(self.client, p), params)).answer

    def complete(self, **params: Any) -> Completion:
        """completions.create(**params) with the harness's retries (RequestFailed after the last)."""
        return self.sender.call(lambda: attempt(self.client.completions.create, params))

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> Endpoint:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
