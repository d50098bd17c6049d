"""The prefix-cache check's phase (issue 60, 1): each prompt answered greedy twice, with the prefix cache emptied
(cold) and with its shared prefix cached by a sibling prompt just before (warm), through the phases' openai client.

The prompts are built from the shipped natural prompts (tasks/throughput/natural.jsonl), seeded: groups of
`siblings` prompts share a prefix of `prefix_words` words (several natural prompts as background notes), each ending
in its own request. Per prompt: empty the cache, ask one sibling for one token (its prefix is now cached), ask the
prompt (warm); empty the cache, ask the prompt (cold). One request at a time, so nothing else is in the batch and
only the cache path differs between the two answers. The cache is emptied through the engine's own endpoint (vLLM's
POST /reset_prefix_cache, which it serves with VLLM_SERVER_DEV_MODE=1; SGLang's /flush_cache); an endpoint that
cannot empty it is recorded as such and the check is not measured.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import httpx

from evalharness.measures.prefix_cache.spec import CacheAnswer, PrefixCacheRecord, PrefixCacheSection
from evalharness.phases.prompts import answer_text, first_difference, load_prompts
from evalharness.phases.openai_api import Endpoint
from evalharness.phases.retries import RequestFailed
from evalharness.phases.served import Served
from evalharness.records.measures import RequestTally

NATURAL = Path(__file__).resolve().parents[3] / "tasks" / "throughput" / "natural.jsonl"
ASK = "\n\nNow, without repeating the notes: "  # where a prompt's shared prefix ends and its own request begins
FLUSH_TRIES = 10  # vLLM refuses to reset while blocks are held; a request that just finished may still hold them


def cache_prompts(count: int, siblings: int, prefix_words: int, seed: int,
                  source: Path = NATURAL) -> list[tuple[str, int, str]]:
    """(id, group, prompt text) of `count` prompts in groups of `siblings` sharing a prefix (pure but for reading
    the shipped prompts): the same list for every cell of a run."""
    texts = [messages[-1]["content"] for _, messages in load_prompts(source, 2)]
    rng = random.Random(seed)
    out: list[tuple[str, int, str]] = []
    group = 0
    while len(out) < count:
        words: list[str] = []
        while len(words) < prefix_words:
            words += rng.choice(texts).split()
        prefix = "Background notes:\n\n" + " ".join(words[:prefix_words]) + ASK
        for sibling in range(siblings):
            if len(out) < count:
                out.append((f"g{group}-{sibling}", group, prefix + rng.choice(texts)))
        group += 1
    return out


def warmer(prompts: list[tuple[str, int, str]], index: int) -> str:
    """The request that caches prompt `index`'s prefix before its warm answer: the next prompt of its group, or,
    where the group has no other (a last group cut short by `count`), its prefix with a request of its own."""
    pid, group, text = prompts[index]
    others = [t for p, g, t in prompts[index + 1:] + prompts[:index] if g == group and p != pid]
    return others[0] if others else text.split(ASK)[0] + ASK + "say nothing."


def flush(client: httpx.Client, url: str) -> str | None:
    """Empty the engine's prefix cache; None when it did, else why not."""
    for _ in range(FLUSH_TRIES):
        try:
            reply = client.post(url)
        except httpx.HTTPError as exc:
            return f"POST {url}: {type(exc).__name__}"
        if reply.status_code in (404, 405):
            return f"POST {url} answered {reply.status_code}: the endpoint cannot empty its prefix cache"
        refused = reply.status_code != 200 or _refused(reply)
        if not refused:
            return None
        time.sleep(0.2)
    return f"POST {url} did not empty the cache in {FLUSH_TRIES} tries ({reply.status_code}: {reply.text[:120]})"


def _refused(reply: httpx.Response) -> bool:
    """vLLM answers 200 with {"success": false} while blocks are held (SGLang answers 400 then)."""
    try:
        body = reply.json()
    except ValueError:
        return False
    return isinstance(body, dict) and body.get("success") is False


class _NotFlushed(Exception):
    """The cache could not be emptied before one prompt's answer."""


def _tokens(reply: Any) -> list[tuple[str, float]]:
    choice = reply.choices[0] if reply.choices else None
    content = getattr(getattr(choice, "logprobs", None), "content", None) or []
    return [(item.token, item.logprob) for item in content]


def logprob_gap(cold: list[tuple[str, float]], warm: list[tuple[str, float]]) -> float | None:
    """The largest |cold - warm| log-probability over the tokens both answers chose, up to where they part; None when
    either side returned none."""
    gaps = []
    for (token_a, lp_a), (token_b, lp_b) in zip(cold, warm):
        if token_a != token_b:
            break
        gaps.append(abs(lp_a - lp_b))
    return max(gaps) if gaps else None


def run_phase(served: Served, section: PrefixCacheSection) -> tuple[PrefixCacheRecord, RequestTally]:
    """Every prompt cold and warm; a prompt whose request or flush fails keeps its error and is left out."""
    path = section.flush_path or served.cache_flush_path
    begin = time.monotonic()
    if path is None:
        return PrefixCacheRecord(flush="none", unavailable=f"{served.engine_label} names no endpoint that empties its "
                                 "prefix cache (set prefix_cache.flush_path)"), RequestTally()
    url = served.root_url.rstrip("/") + path
    prompts = cache_prompts(section.count, section.siblings, section.prefix_words, section.seed)
    answers: list[CacheAnswer] = []
    with Endpoint(served.base_url, served.timeout_s, retries=served.retries, hung_after=served.hung_after) as api, \
            httpx.Client(timeout=served.timeout_s) as client:
        def ask(text: str, tokens: int) -> Any:
            return api.chat(model=served.model, messages=[{"role": "user", "content": text}], max_tokens=tokens,
                            temperature=0.0, seed=0, logprobs=True)

        for index, (pid, group, text) in enumerate(prompts):
            sibling = warmer(prompts, index)
            try:
                why = flush(client, url)
                if why is not None and not answers:
                    return PrefixCacheRecord(flush=f"POST {path}", unavailable=why), api.tally
                if why is not None:
                    raise _NotFlushed(why)
                ask(sibling, 1)
                warm = ask(text, section.max_tokens)
                why = flush(client, url)
                if why is not None:
                    raise _NotFlushed(why)
                cold = ask(text, section.max_tokens)
            except (RequestFailed, _NotFlushed) as exc:
                answers.append(CacheAnswer(id=pid, error=str(exc)[:300]))
                continue
            cold_text, warm_text = _text(cold), _text(warm)
            answers.append(CacheAnswer(id=pid, cold=cold_text, warm=warm_text,
                                       first_difference=first_difference(cold_text, warm_text),
                                       logprob_gap=logprob_gap(_tokens(cold), _tokens(warm)),
                                       cached_tokens_cold=_cached(cold), cached_tokens_warm=_cached(warm)))
        tally = api.tally
    return PrefixCacheRecord(flush=f"POST {path}", max_tokens=section.max_tokens, prefix_words=section.prefix_words,
                             answers=answers, seconds=round(time.monotonic() - begin, 2)), tally


def _text(reply: Any) -> str:
    """A thinking model's reasoning and its answer (a short budget is often all thinking), as batching compares."""
    return answer_text(reply.choices[0].message) if reply.choices else ""


def _cached(reply: Any) -> int | None:
    details = getattr(getattr(reply, "usage", None), "prompt_tokens_details", None)
    value = getattr(details, "cached_tokens", None)
    return value if isinstance(value, int) else None
