"""The batch-dependence phase (issue 39): the same greedy chat prompts answered alone, one request at a time, and
again inside a full batch of other requests, through the openai client (phases/openai_api.py); each prompt's two
answers compared character by character (phases/prompts.py).

Few engines are batch-invariant: a batched kernel may sum in another order, so a greedy answer can change with what
else is in flight. The reference's own rate is the floor; compare.py flags a cell whose rate is credibly above it.
Measured on vLLM 0.32.0's CPU build, SmolLM2-135M, 16 natural prompts, 64 tokens, 16 in flight (2026-12-04):
float32 0/16 answers changed, bfloat16 8/16 (first difference at character 75 to 318); each pass alone twice gave the
same answers (0/16) on both.

The batched pass keeps `concurrency` requests in flight: half of the other requests start first, then the prompts,
then the rest, each other request asking twice the prompts' tokens so the batch stays full while they are answered.

Then `tasks`: the same documents the quality phase answers at quality.concurrency, `task_documents` of each (a
seeded subset, the same in every cell, repeat 0's seed) answered one request at a time through the quality phase's
own lm-eval runner (Served.answer_tasks), under cells/<id>/alone/; compare.py pairs them per document.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from evalharness.measures.batching.spec import BatchAnswer, BatchDependence, BatchingSection
from evalharness.phases.openai_api import Endpoint
from evalharness.phases.prompts import DEFAULT_PROMPTS, answer_text, first_difference, load_prompts
from evalharness.phases.retries import RequestFailed, map_in_threads
from evalharness.phases.served import Served
from evalharness.records.measures import RequestTally


def run_phase(served: Served, section: BatchingSection) -> tuple[BatchDependence, RequestTally]:
    """Both passes; a prompt whose request fails after retries keeps its error and is left out of the rate."""
    count, max_tokens, concurrency = section.count, section.max_tokens, section.concurrency
    model = served.model
    prompts = load_prompts(Path(section.prompts) if section.prompts else DEFAULT_PROMPTS, count + 1)
    targets, others = prompts[:count], prompts[count:]
    fillers = [others[i % len(others)][1] for i in range(concurrency)]
    begin = time.monotonic()
    lock = threading.Lock()
    errors: dict[tuple[str, str], str] = {}

    with Endpoint(served.base_url, served.timeout_s, retries=served.retries, hung_after=served.hung_after) as api:
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
    seconds = round(time.monotonic() - begin, 2)  # the prompts' passes: the tasks alone keep their own time
    alone = (served.answer_tasks(section.tasks, "alone", 1, section.task_documents)
             if section.tasks and served.answer_tasks is not None else [])
    return BatchDependence(concurrency=concurrency, max_tokens=max_tokens, answers=answers, seconds=seconds,
                           alone=alone), tally
