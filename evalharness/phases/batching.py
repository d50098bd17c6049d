"""The batch-dependence phase (issue 39): the same greedy chat prompts answered alone, one request at a time, and
again inside a full batch of other requests, through the openai client (phases/openai_api.py); each prompt's two
answers compared character by character.

Few engines are batch-invariant: a batched kernel may sum in another order, so a greedy answer can change with what
else is in flight. The reference's own rate is the floor; analysis/batching.py flags a cell whose rate is credibly
above it. Measured on vLLM 0.32.0's CPU build, SmolLM2-135M, 16 natural prompts, 64 tokens, 16 in flight
(2026-12-04): float32 0/16 answers changed, bfloat16 8/16 (first difference at character 75 to 318); each pass alone
twice gave the same answers (0/16) on both.

The batched pass keeps `concurrency` requests in flight: half of the other requests start first, then the prompts,
then the rest, each other request asking twice the prompts' tokens so the batch stays full while they are answered.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from evalharness.phases.openai_api import Endpoint
from evalharness.phases.retries import RequestFailed, map_in_threads
from evalharness.records.measures import BatchAnswer, BatchDependence, RequestTally

DEFAULT_PROMPTS = Path(__file__).resolve().parents[2] / "tasks" / "throughput" / "natural.jsonl"


class BatchPromptsError(ValueError):
    """The prompts file is missing, malformed or too short (bad input)."""


def load_prompts(path: Path, needed: int) -> list[tuple[str, list[dict[str, Any]]]]:
    """(id, messages) of every line ({id, prompt} or {id, messages}), at least `needed` of them."""
    try:
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except OSError as exc:
        raise BatchPromptsError(f"batching.prompts {path}: cannot be read ({exc.strerror or exc})") from None
    out = []
    for number, line in enumerate(lines, 1):
        try:
            row = json.loads(line)
            messages = row.get("messages") or [{"role": "user", "content": str(row["prompt"])}]
            out.append((str(row.get("id", number)), messages))
        except (ValueError, KeyError, AttributeError, TypeError):
            raise BatchPromptsError(f"batching.prompts {path}, line {number}: expected {{id, prompt}} or "
                                    "{id, messages}") from None
    if len(out) < needed:
        raise BatchPromptsError(f"batching.prompts {path}: {len(out)} prompts, the phase needs {needed} (count "
                                "prompts and at least one other request for the batch)")
    return out


def first_difference(a: str, b: str) -> int | None:
    """The first character where two answers differ; None when they are the same."""
    if a == b:
        return None
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def answer_text(message: Any) -> str:
    """What is compared between the two passes: the reasoning a reasoning parser split off (a thinking model's
    budget is often all thinking, and its answer then empty on both sides), then the answer."""
    extra = getattr(message, "model_extra", None) or {}
    reasoning = extra.get("reasoning_content") or extra.get("reasoning") or ""
    content = getattr(message, "content", None) or ""
    return f"{reasoning}\n</think>\n{content}" if reasoning else content


def run_phase(base_url: str, model: str, prompts_path: Path | None, count: int, max_tokens: int, concurrency: int,
              timeout_s: float, retries: int = 2, hung_after: int = 3) -> tuple[BatchDependence, RequestTally]:
    """Both passes; a prompt whose request fails after retries keeps its error and is left out of the rate."""
    prompts = load_prompts(prompts_path or DEFAULT_PROMPTS, count + 1)
    targets, others = prompts[:count], prompts[count:]
    fillers = [others[i % len(others)][1] for i in range(concurrency)]
    begin = time.monotonic()
    lock = threading.Lock()
    errors: dict[tuple[str, str], str] = {}

    with Endpoint(base_url, timeout_s, retries=retries, hung_after=hung_after) as api:
        def ask(messages: list[dict[str, Any]], tokens: int, key: tuple[str, str] | None = None) -> str | None:
            try:
                reply = api.chat(model=model, messages=messages, max_tokens=tokens, temperature=0.0, seed=0)
                return answer_text(reply.choices[0].message) if reply.choices else ""
            except RequestFailed as exc:
                if key is not None:
                    with lock:
                        errors[key] = str(exc)[:300]
                return None

        alone = [ask(messages, max_tokens, (pid, "alone")) for pid, messages in targets]
        half = len(fillers) // 2
        jobs = ([("filler", m) for m in fillers[:half]] + [("target", t) for t in targets]
                + [("filler", m) for m in fillers[half:]])

        def run(job: tuple[str, Any]) -> str | None:
            kind, item = job
            if kind == "filler":
                return ask(item, 2 * max_tokens)
            return ask(item[1], max_tokens, (item[0], "batched"))

        results = map_in_threads(run, jobs, concurrency)
        batched = [r for (kind, _), r in zip(jobs, results) if kind == "target"]
        tally = api.tally
    answers = []
    for (pid, _), a, b in zip(targets, alone, batched):
        error = errors.get((pid, "alone")) or errors.get((pid, "batched"))
        answers.append(BatchAnswer(id=pid, alone=a, batched=b, error=error,
                                   first_difference=None if error else first_difference(a or "", b or "")))
    return BatchDependence(concurrency=concurrency, max_tokens=max_tokens, answers=answers,
                           seconds=round(time.monotonic() - begin, 2)), tally
