"""The calls-modes phase (issue 60, 2): each calls task's first `cases` cases answered in four modes, through the
phases' openai client: one request at a time and `concurrency` at once, each not streamed and streamed (the stream
read to its end and its tool calls put together by index: phases/openai_api.py `streamed_chat`). Each answer is
scored by the calls tasks' own scorer (measures/calls/score.py) to one outcome: valid, invalid, refused (HTTP 4xx, the
engine's words kept out of the record) or error (failed after retries). The request body is the calls worker's
(measures/calls/worker.py `request_params`): greedy, the case's own tools or response_format."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from evalharness.measures.calls.spec import MODES, CallsModesRecord, CallsModesSection, CaseModes, TaskModes
from evalharness.measures.calls.cases import Case, CallsDataError, calls_task_path, load_cases
from evalharness.measures.calls.score import score_case
from evalharness.measures.calls.worker import request_params
from evalharness.phases.openai_api import Endpoint
from evalharness.phases.retries import RequestFailed, map_in_threads
from evalharness.phases.served import Served
from evalharness.records.measures import RequestTally


def outcome(case: Case, api: Endpoint, params: dict[str, Any], streamed: bool) -> str:
    """One case's answer in one mode, scored: valid, invalid, refused or error."""
    try:
        if streamed:
            answer = api.chat_streamed(**params)
            content, calls = answer.content, answer.tool_calls
        else:
            reply = api.chat(**params)
            message = reply.choices[0].message if reply.choices else None
            content = getattr(message, "content", None)
            calls = [{"function": {"name": c.function.name, "arguments": c.function.arguments}}
                     for c in (getattr(message, "tool_calls", None) or []) if getattr(c, "function", None)]
    except RequestFailed as exc:
        if exc.kind.startswith("http_4") and exc.kind != "http_429":
            return "refused"  # the engine would not take the request in this mode (a schema its grammar lacks)
        return "error"
    return "valid" if score_case(case, content, calls).valid else "invalid"


def run_phase(served: Served, section: CallsModesSection) -> tuple[CallsModesRecord, RequestTally]:
    """Every task's cases in every mode; a task that is not a calls task leaves the check unmeasured."""
    begin = time.monotonic()
    paths = {task: calls_task_path(task, served.include_path) for task in section.tasks}
    missing = [task for task, path in paths.items() if path is None]
    if missing:
        return CallsModesRecord(unavailable=f"not calls tasks: {', '.join(missing)} (no tasks/calls/data/<task>.jsonl)"
                                ), RequestTally()
    tasks: list[TaskModes] = []
    with Endpoint(served.base_url, served.timeout_s, retries=served.retries, hung_after=served.hung_after) as api:
        for task, path in paths.items():
            try:
                cases = load_cases(Path(path))[: section.cases]
            except CallsDataError as exc:
                return CallsModesRecord(unavailable=str(exc)), api.tally
            spec = {"model": served.model, "max_gen_toks": section.max_tokens,
                    "chat_template_kwargs": section.chat_template_kwargs}
            found = TaskModes(task=task, kind=cases[0].kind if cases else "", cases=[CaseModes(id=c.id) for c in cases])
            for mode, (streamed, loaded) in MODES.items():
                def ask(index: int, streamed: bool = streamed) -> str:
                    return outcome(cases[index], api, request_params(cases[index], spec), streamed)

                results = map_in_threads(ask, list(range(len(cases))), section.concurrency if loaded else 1)
                for entry, result in zip(found.cases, results):
                    entry.outcomes[mode] = result
            tasks.append(found)
        # a refusal (HTTP 4xx) is the engine's answer in that mode, an outcome the check pairs, not a failed request:
        # counted as failed it would stop the cell (requests.max_error_rate) that the check is there to show
        refused = sum(c.outcomes.get(m) == "refused" for t in tasks for c in t.cases for m in MODES)
        tally = api.tally.model_copy(update={"failed": max(0, api.tally.failed - refused)})
    return CallsModesRecord(concurrency=section.concurrency, tasks=tasks,
                            seconds=round(time.monotonic() - begin, 2)), tally
