"""lm-eval's OpenAI-compatible clients, extended by what a reasoning model needs; imported by the worker only.

lm-eval's chat client scores `message.content` and drops the rest of the answer: a reasoning model's thinking
(`reasoning_content`, or `reasoning` in newer vLLM) and every `finish_reason`. These subclasses (one level below
lm-eval's own, registered under their own names) score exactly what lm-eval scores and keep the rest beside it, in a
side file of one JSON line per answer keyed by the request's prompt hash, the hash lm-eval writes into each sample
(`prompt_hash`, sha256 of the prompt it sent), so the worker can join them to the samples.

The request and its answer meet in `parse_generations`, which lm-eval calls with the answer only: the prompt's key is
carried across in a context variable set in `create_message`. lm-eval sends concurrent requests as asyncio tasks,
each with its own copy of the context, so concurrent requests never see each other's key.

`chat_template_kwargs` (e.g. {"enable_thinking": true}) goes into every chat request; vLLM and SGLang both read it.
With `think_end_token` (an engine without a reasoning parser returns the thinking inside content), lm-eval keeps the
text after the token; an answer cut off before the token is all thinking, so it is scored as an empty answer here
rather than as whatever the thinking said last.

Stop strings (`stop_strings`): lm-eval sends a task's `until` as the request's `stop`, and vLLM and SGLang match it
inside the reasoning too (sgl-project/sglang#40529, vllm-project/vllm#52393): a chain that says "Question:" while
thinking ends there with an empty answer and finish_reason "stop". With "answer" (the default for chat) the stop
strings are not sent; they cut the answer (the content after the reasoning) here, as the engine would have cut a
model that does not think. With "engine" they are sent as lm-eval sends them. The side file keeps the engine's
matched stop (`stop_reason`) and the stop string that cut the answer here (`answer_stop`).

The completions client also takes `tokenizer_backend="local"` with `local_tokenizer` (a folder): the served model's
tokenizer.json read on this machine (_local_tokenizer.py), used through lm-eval's "remote" code paths, for engines
without /tokenizer_info (SGLang).

Every request goes through _lmeval_requests.py: journaled (a retry or a resume sends only what is not yet answered)
and streamed (judged by silence, not by a wall clock).
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import aiohttp
from lm_eval.api.registry import register_model
from lm_eval.models.api_models import LMEVAL_MODEL_NONE_ANSWER_PLACEHOLDER
from lm_eval.models.openai_completions import LocalChatCompletion, LocalCompletionsAPI

from evalharness.phases._lmeval_requests import STOP_KEYS, Journal, request_key, send
from evalharness.phases._local_tokenizer import LocalTokenizer

_PROMPT_KEYS: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("evalharness_prompt_keys", default=())
# the stop strings the harness applies to the answer of the request under way ("answer" mode; never sent)
_ANSWER_STOPS: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("evalharness_answer_stops", default=())


def prompt_key(message: Any) -> str:
    """lm-eval's prompt_hash of one request: sha256 of the prompt text (a chat prompt is its JSON string)."""
    text = getattr(message, "prompt", message)
    if not isinstance(text, str):
        text = json.dumps(text)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def cut_at_stops(answer: str, stops: tuple[str, ...]) -> tuple[str, str | None]:
    """The answer up to its first stop string, and that string (pure; lm-eval's own rule for models that do not
    stop on the server: the earliest match wins)."""
    found = [(answer.find(stop), stop) for stop in stops if stop and stop in answer]
    if not found:
        return answer, None
    at, stop = min(found)
    return answer[:at], stop


def answer_record(key: str, choice: dict, usage: dict | None, think_end_token: str | None,
                  answer_stop: str | None = None) -> dict:
    """What the side file keeps of one answer (pure): the reasoning apart from the content, and what stopped it."""
    message = choice.get("message") or {}
    content = message.get("content") if message else choice.get("text")
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if think_end_token and not reasoning and isinstance(content, str):
        thought, found, _ = content.partition(think_end_token)
        if found or choice.get("finish_reason") == "length":
            reasoning = thought  # before the token, or all of it when the token never came
    details = (usage or {}).get("completion_tokens_details") or {}
    stop_reason = next((choice[k] for k in STOP_KEYS if choice.get(k) is not None), None)
    return {"prompt_hash": key, "finish_reason": choice.get("finish_reason"),
            # a string: the stop string the engine matched (an int is a stop token id, None the end of sequence)
            "stop_reason": stop_reason if isinstance(stop_reason, str) else None,
            "answer_stop": answer_stop, "reasoning": reasoning or None, "content": content,
            "completion_tokens": (usage or {}).get("completion_tokens"),
            "reasoning_tokens": details.get("reasoning_tokens")}


class _SideFile:
    def __init__(self, path: str | None, think_end_token: str | None):
        self.path = Path(path) if path else None
        self.think_end_token = think_end_token

    def record(self, outputs: Any, answer_stops: list[str | None] | None = None) -> list[dict]:
        records = []
        keys = _PROMPT_KEYS.get()
        for out in outputs if isinstance(outputs, list) else [outputs]:
            choices = (out or {}).get("choices") or []
            usage = out.get("usage") if len(choices) == 1 else None  # one request's usage covers all its choices
            for choice in choices:
                index = choice.get("index", 0)
                key = keys[index] if index < len(keys) else ""
                stop = answer_stops[len(records)] if answer_stops and len(records) < len(answer_stops) else None
                records.append(answer_record(key, choice, usage, self.think_end_token, stop))
        if self.path is not None and records:
            with open(self.path, "a", encoding="utf-8") as handle:  # appended: a rerun's cached answers keep theirs
                handle.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
        return records


def _payload(model: Any, messages: Any, generate: bool, gen_kwargs: dict | None, **kwargs: Any) -> dict:
    return model._create_payload(model.create_message(messages), generate=generate,
                                 gen_kwargs=copy.deepcopy(gen_kwargs),  # lm-eval shares one dict between requests
                                 seed=model._seed, **kwargs)


async def _answer(model: Any, session: aiohttp.ClientSession, payload: dict, generate: bool) -> Any:
    """The engine's answer to one payload: from the journal when this request was answered before, else sent
    (streamed when it generates) and journaled; a failed attempt is logged and raised for lm-eval's retry."""
    key = request_key(payload)
    kept = model._journal.get(key)
    if kept is not None:
        return kept
    try:
        outputs = await send(session, model.base_url, model.header, payload, silence_s=float(model.timeout),
                             stream=generate, chat=model._chat)
    except Exception as exc:
        model._journal.failed(key, exc)
        raise
    model._journal.keep(key, outputs)
    return outputs


async def _amodel_call(self, session, sem, messages, *, generate=True, cache_keys=None, ctxlens=None,
                       gen_kwargs=None, **kwargs):
    """TemplateAPI.amodel_call, with the request itself through the journal and the stream (_answer)."""
    payload = _payload(self, messages, generate, gen_kwargs, **kwargs)
    async with sem:
        outputs = await _answer(self, session, payload, generate)
    answers = (self.parse_generations(outputs=outputs) if generate
               else self.parse_logprobs(outputs=outputs, tokens=messages, ctxlens=ctxlens))
    answers = [LMEVAL_MODEL_NONE_ANSWER_PLACEHOLDER if a is None else a for a in answers]
    if cache_keys:
        for answer, cache_key in zip(answers, cache_keys):
            self.cache_hook.add_partial("generate_until" if generate else "loglikelihood", cache_key, answer)
    return answers


def _model_call(self, messages, *, generate=True, gen_kwargs=None, **kwargs):
    """TemplateAPI.model_call (lm-eval's path at concurrency 1), through the same journal and stream."""
    payload = _payload(self, messages, generate, gen_kwargs, eos=self.eos_string, **kwargs)

    async def once():
        async with aiohttp.ClientSession() as session:
            return await _answer(self, session, payload, generate)

    return asyncio.run(once())


@register_model("evalharness-chat")
class RecordingChat(LocalChatCompletion):
    _chat = True
    amodel_call = _amodel_call
    model_call = _model_call

    def __init__(self, record_path: str | None = None, chat_template_kwargs: dict | None = None,
                 journal_path: str | None = None, failures_path: str | None = None, stop_strings: str = "answer",
                 **kwargs: Any):
        super().__init__(**kwargs)
        self._side = _SideFile(record_path, kwargs.get("think_end_token"))
        self._template_kwargs = chat_template_kwargs
        self._journal = Journal(journal_path, failures_path)
        self._stop_strings = stop_strings

    def create_message(self, messages, generate=False):
        _PROMPT_KEYS.set(tuple(prompt_key(m) for m in messages))
        return super().create_message(messages, generate)

    def _create_payload(self, messages, generate=False, gen_kwargs=None, seed=1234, eos=None, **kwargs) -> dict:
        payload = super()._create_payload(messages, generate=generate, gen_kwargs=gen_kwargs, seed=seed, eos=eos,
                                          **kwargs)
        if self._template_kwargs:
            payload["chat_template_kwargs"] = self._template_kwargs
        if generate and self._stop_strings == "answer":
            stops = payload.pop("stop", None) or []
            _ANSWER_STOPS.set(tuple(s for s in stops if isinstance(s, str)))
        return payload

    def parse_generations(self, outputs, **kwargs) -> list[str]:
        answers = super().parse_generations(outputs, **kwargs)
        stops = _ANSWER_STOPS.get() if self._stop_strings == "answer" else ()
        cut_by: list[str | None] = []
        for i, answer in enumerate(answers):
            stop = None
            if stops and isinstance(answer, str):
                answers[i], stop = cut_at_stops(answer, stops)
            cut_by.append(stop)
        records = self._side.record(outputs, cut_by)
        if self.think_end_token:  # cut off while thinking: no answer was given
            for i, record in enumerate(records[: len(answers)]):
                if record["finish_reason"] == "length" and self.think_end_token not in (record["content"] or ""):
                    answers[i] = ""
        return answers


@register_model("evalharness-completions")
class RecordingCompletions(LocalCompletionsAPI):
    _chat = False
    amodel_call = _amodel_call
    model_call = _model_call

    def __init__(self, record_path: str | None = None, journal_path: str | None = None,
                 failures_path: str | None = None, stop_strings: str = "engine", local_tokenizer: str | None = None,
                 **kwargs: Any):
        local = kwargs.get("tokenizer_backend") == "local"
        if local:  # lm-eval builds no tokenizer for "none" (and sends no request); the local one is put in its place
            kwargs["tokenizer_backend"] = "none"
        super().__init__(**kwargs)
        if local:
            if not local_tokenizer:
                raise ValueError("tokenizer_backend local needs local_tokenizer (the folder of its tokenizer.json)")
            self.tokenizer = LocalTokenizer(local_tokenizer)
            # RemoteTokenizer's interface: lm-eval's "remote" branches (tok_encode, decode_batch, eot_token_id,
            # prefix_token_id, eos_string) use it as they use the engine's
            self.tokenizer_backend = "remote"
            self.tokenized_requests = kwargs.get("tokenized_requests", True)  # "none" had switched it off
        self._side = _SideFile(record_path, None)
        self._journal = Journal(journal_path, failures_path)
        if stop_strings != "engine":  # a base model's continuation has no reasoning to protect from them
            raise ValueError("stop_strings: answer applies to api: chat only")

    def create_message(self, messages, generate=False):
        _PROMPT_KEYS.set(tuple(prompt_key(m) for m in messages))
        return super().create_message(messages, generate)

    def parse_generations(self, outputs, **kwargs) -> list[str]:
        self._side.record(outputs)
        return LocalCompletionsAPI.parse_generations(outputs, **kwargs)
