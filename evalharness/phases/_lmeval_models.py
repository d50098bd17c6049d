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
"""

from __future__ import annotations

import contextvars
import hashlib
import json
from pathlib import Path
from typing import Any

from lm_eval.api.registry import register_model
from lm_eval.models.openai_completions import LocalChatCompletion, LocalCompletionsAPI

_PROMPT_KEYS: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("evalharness_prompt_keys", default=())


def prompt_key(message: Any) -> str:
    """lm-eval's prompt_hash of one request: sha256 of the prompt text (a chat prompt is its JSON string)."""
    text = getattr(message, "prompt", message)
    if not isinstance(text, str):
        text = json.dumps(text)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def answer_record(key: str, choice: dict, usage: dict | None, think_end_token: str | None) -> dict:
    """What the side file keeps of one answer (pure): the reasoning apart from the content."""
    message = choice.get("message") or {}
    content = message.get("content") if message else choice.get("text")
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if think_end_token and not reasoning and isinstance(content, str):
        thought, found, _ = content.partition(think_end_token)
        if found or choice.get("finish_reason") == "length":
            reasoning = thought  # before the token, or all of it when the token never came
    details = (usage or {}).get("completion_tokens_details") or {}
    # what stopped a finish_reason "stop": a stop string (str) or token (int); None for the end of sequence. vLLM
    # names it stop_reason, SGLang matched_stop; a string means the answer was cut at one of the task's `until`
    stop = choice.get("stop_reason", choice.get("matched_stop"))
    return {"prompt_hash": key, "finish_reason": choice.get("finish_reason"), "reasoning": reasoning or None,
            "content": content, "completion_tokens": (usage or {}).get("completion_tokens"),
            "reasoning_tokens": details.get("reasoning_tokens"),
            "stop_reason": stop if isinstance(stop, (str, int)) else None}


class _SideFile:
    def __init__(self, path: str | None, think_end_token: str | None):
        self.path = Path(path) if path else None
        self.think_end_token = think_end_token

    def record(self, outputs: Any) -> list[dict]:
        records = []
        keys = _PROMPT_KEYS.get()
        for out in outputs if isinstance(outputs, list) else [outputs]:
            choices = (out or {}).get("choices") or []
            usage = out.get("usage") if len(choices) == 1 else None  # one request's usage covers all its choices
            for choice in choices:
                index = choice.get("index", 0)
                key = keys[index] if index < len(keys) else ""
                records.append(answer_record(key, choice, usage, self.think_end_token))
        if self.path is not None and records:
            with open(self.path, "a", encoding="utf-8") as handle:  # appended: a rerun's cached answers keep theirs
                handle.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
        return records


@register_model("evalharness-chat")
class RecordingChat(LocalChatCompletion):
    def __init__(self, record_path: str | None = None, chat_template_kwargs: dict | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self._side = _SideFile(record_path, kwargs.get("think_end_token"))
        self._template_kwargs = chat_template_kwargs

    def create_message(self, messages, generate=False):
        _PROMPT_KEYS.set(tuple(prompt_key(m) for m in messages))
        return super().create_message(messages, generate)

    def _create_payload(self, messages, generate=False, gen_kwargs=None, seed=1234, eos=None, **kwargs) -> dict:
        payload = super()._create_payload(messages, generate=generate, gen_kwargs=gen_kwargs, seed=seed, eos=eos,
                                          **kwargs)
        if self._template_kwargs:
            payload["chat_template_kwargs"] = self._template_kwargs
        return payload

    def parse_generations(self, outputs, **kwargs) -> list[str]:
        records = self._side.record(outputs)
        answers = super().parse_generations(outputs, **kwargs)
        if self.think_end_token:  # cut off while thinking: no answer was given
            for i, record in enumerate(records[: len(answers)]):
                if record["finish_reason"] == "length" and self.think_end_token not in (record["content"] or ""):
                    answers[i] = ""
        return answers


@register_model("evalharness-completions")
class RecordingCompletions(LocalCompletionsAPI):
    def __init__(self, record_path: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self._side = _SideFile(record_path, None)

    def create_message(self, messages, generate=False):
        _PROMPT_KEYS.set(tuple(prompt_key(m) for m in messages))
        return super().create_message(messages, generate)

    def parse_generations(self, outputs, **kwargs) -> list[str]:
        self._side.record(outputs)
        return LocalCompletionsAPI.parse_generations(outputs, **kwargs)
