"""Calls under load and streamed (evalharness/measures/calls/, issue 60, 2): a streamed answer put together as
a client would, each mode paired per case against its other mode, the report and the decision's qualifiers."""

from __future__ import annotations

import json

import httpx
import pytest

from evalharness.analysis.decision import qualifiers
from evalharness.measures.calls.compare import compare as modes_change, mode_changes
from evalharness.measures.calls.phase import outcome
from evalharness.measures.calls.spec import KEY, CallsModesRecord, CaseModes, TaskModes
from evalharness.measures.reports import measure_sections
from evalharness.measures.calls.cases import calls_task_path, load_cases
from evalharness.phases.openai_api import Endpoint
from evalharness.records.decision import Decision
from evalharness.records.run import RunResult
from tests.unit.measures.runs import run_of


def _sse(events: list[dict]) -> bytes:
    return ("".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n").encode()


def _chunk(delta: dict, finish: str | None = None) -> dict:
    return {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def _endpoint(body: bytes) -> Endpoint:
    transport = httpx.MockTransport(lambda request: httpx.Response(
        200, content=body, headers={"content-type": "text/event-stream"}))
    return Endpoint("http://engine/v1", 10.0, retries=0, http_client=httpx.Client(transport=transport))


def test_a_streamed_tool_call_is_put_together_by_index_and_scored_as_the_unstreamed_one_would_be():
    case = next(c for c in load_cases(calls_task_path("eh_tools")) if c.way == "required")
    name = case.expected["name"]
    arguments = json.dumps(case.expected["arguments"])
    half = len(arguments) // 2
    body = _sse([_chunk({"role": "assistant"}),
                 _chunk({"tool_calls": [{"index": 0, "id": "t", "type": "function",
                                         "function": {"name": name, "arguments": arguments[:half]}}]}),
                 _chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments[half:]}}]}),
                 _chunk({}, "tool_calls")])
    with _endpoint(body) as api:
        streamed = api.chat_streamed(model="m", messages=[{"role": "user", "content": "x"}])
        assert streamed.tool_calls == [{"function": {"name": name, "arguments": arguments}}]
        assert streamed.finish_reason == "tool_calls"
        assert outcome(case, api, {"model": "m", "messages": []}, streamed=True) == "valid"
    cut = _sse([_chunk({"tool_calls": [{"index": 0, "id": "t", "type": "function",
                                        "function": {"name": name, "arguments": arguments[:half]}}]}),
                _chunk({}, "length")])
    with _endpoint(cut) as api:  # the arguments cut short: not a valid call
        assert outcome(case, api, {"model": "m", "messages": []}, streamed=True) == "invalid"


def test_a_streamed_json_answer_is_joined_from_its_pieces():
    case = next(c for c in load_cases(calls_task_path("eh_json")))
    text = json.dumps(case.expected)
    body = _sse([_chunk({"role": "assistant", "content": text[:5]}), _chunk({"content": text[5:]}),
                 _chunk({}, "stop")])
    with _endpoint(body) as api:
        assert api.chat_streamed(model="m", messages=[]).content == text
        assert outcome(case, api, {"model": "m", "messages": []}, streamed=True) == "valid"


def _record(broken: dict[str, int], n: int = 48) -> CallsModesRecord:
    """Every case valid in every mode but the first `broken[mode]` cases of a mode, invalid."""
    cases = [CaseModes(id=f"c{i}", outcomes={m: "invalid" if i < broken.get(m, 0) else "valid"
                                             for m in ("alone", "streamed", "load", "load_streamed")})
             for i in range(n)]
    return CallsModesRecord(concurrency=16, tasks=[TaskModes(task="eh_tools", kind="tools", cases=cases)])


def test_a_mode_whose_valid_share_falls_is_flagged_against_its_other_mode_and_equal_modes_are_not():
    found = {(c.base, c.mode): c for c in mode_changes(_record({"load_streamed": 20}), 0.05)}
    assert found[("load", "load_streamed")].flagged and found[("streamed", "load_streamed")].flagged
    assert found[("load", "load_streamed")].mode_valid == pytest.approx(28 / 48)
    assert not found[("alone", "streamed")].flagged and not found[("alone", "load")].flagged
    assert not any(c.flagged for c in mode_changes(_record({"alone": 2, "streamed": 2, "load": 3}), 0.05))
    assert modes_change(_record({}), CallsModesRecord(unavailable="not calls tasks: x"), 0.05) is None
    errors = _record({"load": 20})
    for case in errors.tasks[0].cases[:40]:
        case.outcomes["load"] = "error"  # failed after retries: left out of the pairing
    assert {(c.base, c.mode): c.cases for c in mode_changes(errors, 0.05)}[("alone", "load")] == 8


def _run(records: dict) -> RunResult:
    return run_of(KEY, records)


def test_the_report_gives_each_mode_and_names_the_fallen_pair_and_the_decision_says_it():
    run = _run({"ref": _record({}), "spec": _record({"load_streamed": 20}), "twin": _record({"streamed": 1})})
    text = "\n".join(measure_sections(run))
    assert "## Calls under load and streamed" in text and "16 at once" in text
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in text.splitlines() if line.startswith("| `")}
    assert rows["`ref` (reference)"][:5] == ["eh\\_tools", "48/48", "48/48", "48/48", "48/48"]
    assert rows["`spec`"][4] == "28/48" and rows["`spec`"][5].startswith("**flagged:** under load, streamed 58%")
    assert rows["`twin`"][5] == "not flagged"
    said = qualifiers(run, Decision(kind="single", pick="spec"))
    assert any(w.startswith("spec: calls under load and streamed: eh_tools valid 58% load + streamed") for w in said)


def test_a_task_that_is_not_a_calls_task_is_not_measured_and_says_so(tmp_path):
    from evalharness.measures.calls.phase import run_phase
    from evalharness.measures.calls.spec import CallsModesSection
    from evalharness.phases.served import Served

    served = Served(base_url="http://127.0.0.1:9/v1", root_url="http://127.0.0.1:9", model="m", timeout_s=1,
                    retries=0, hung_after=3, cell_dir=tmp_path, engine_label="vLLM")
    record, tally = run_phase(served, CallsModesSection(enabled=True, tasks=["gsm8k"]))
    assert record.unavailable == "not calls tasks: gsm8k (no tasks/calls/data/<task>.jsonl)" and tally.requests == 0


def test_an_error_event_inside_a_stream_is_the_engines_refusal_not_a_crash():
    """vLLM 0.32.0 with llguidance answers a tools request streamed with a 200 and an error event carrying its 400
    ("Invalid grammar specification: 'triggers'", seen in test_engine_calls): the case is refused, as unstreamed."""
    case = next(c for c in load_cases(calls_task_path("eh_tools")) if c.way == "required")
    body = _sse([{"error": {"object": "error", "message": "Invalid grammar specification: 'triggers'",
                            "type": "BadRequestError", "param": None, "code": 400}}])
    with _endpoint(body) as api:
        assert outcome(case, api, {"model": "m", "messages": []}, streamed=True) == "refused"
