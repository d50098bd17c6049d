"""The calls tasks (issue 40): the shipped cases are deterministic, and recorded answers are scored as docs/calls.md
says: a malformed call, a call with a schema-invalid argument, a call where none was due, a call the parser left in
the text, a refused schema feature, JSON that breaks its schema."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from evalharness.measures.calls.cases import SHIPPED, Case, CallsDataError, calls_task_path, load_cases
from evalharness.measures.calls.score import score_case, score_refused
from evalharness.measures.calls.worker import request_params, row_of, summarize

ROOT = Path(__file__).resolve().parents[4]


def _generator():
    spec = importlib.util.spec_from_file_location("make_cases", ROOT / "tasks" / "calls" / "make_cases.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_same_seed_writes_the_same_cases_and_the_shipped_files_are_them(tmp_path):
    make = _generator()
    first = make.write(tmp_path / "a")
    second = make.write(tmp_path / "b")
    other = make.write(tmp_path / "c", seed=7)
    for task in ("eh_tools", "eh_json"):
        assert first[task].read_bytes() == second[task].read_bytes()
        assert first[task].read_bytes() != other[task].read_bytes()
        assert first[task].read_bytes() == (SHIPPED / f"{task}.jsonl").read_bytes(), \
            f"tasks/calls/data/{task}.jsonl is not what make_cases.py writes: run it again"
    tools = load_cases(SHIPPED / "eh_tools.jsonl")
    assert len(tools) >= 150
    assert {c.way for c in tools} == {"required", "named", "auto", "none"}
    assert any(c.expected is None for c in tools) and any(c.expected for c in tools)
    # every expected call validates against its own tool's schema: a correct answer is possible
    for case in tools:
        if case.expected:
            scored = score_case(case, None, [{"function": {"name": case.expected["name"],
                                                           "arguments": json.dumps(case.expected["arguments"])}}])
            assert scored.metrics == {"correct": 1.0, "valid_call": 1.0, "right_function": 1.0}, case.id
    for case in load_cases(SHIPPED / "eh_json.jsonl"):
        assert score_case(case, json.dumps(case.expected), []).metrics == {"correct": 1.0, "valid_json": 1.0}, case.id


ALARM = Case(id="t1", kind="tools", way="required", expected={"name": "set_alarm", "arguments": {"hour": 7, "minute": 30}},
             request={"messages": [{"role": "user", "content": "Set an alarm for 07:30."}], "parallel_tool_calls": False,
                      "tool_choice": "required",
                      "tools": [{"type": "function", "function": {"name": "set_alarm", "parameters": {
                          "type": "object", "additionalProperties": False, "required": ["hour", "minute"],
                          "properties": {"hour": {"type": "integer", "minimum": 0, "maximum": 23},
                                         "minute": {"type": "integer", "minimum": 0, "maximum": 59},
                                         "unit": {"type": "string", "default": "h24"}}}}},
                                {"type": "function", "function": {"name": "get_weather", "parameters": {
                                    "type": "object", "properties": {"city": {"type": "string"}}}}}]})
CHAT = ALARM.model_copy(update={"id": "t2", "way": "none", "expected": None})


def _call(name: str, arguments: str) -> dict:
    return {"function": {"name": name, "arguments": arguments}}


def test_a_right_call_is_valid_and_correct_with_numbers_by_value_and_a_stated_default_ignored():
    scored = score_case(ALARM, None, [_call("set_alarm", '{"hour": 7.0, "minute": 30, "unit": "h24"}')])
    assert scored.metrics == {"correct": 1.0, "valid_call": 1.0, "right_function": 1.0} and scored.errors == []
    other_unit = score_case(ALARM, None, [_call("set_alarm", '{"hour": 7, "minute": 30, "unit": "h12"}')])
    assert other_unit.metrics == {"correct": 0.0, "valid_call": 1.0, "right_function": 1.0}


def test_a_malformed_call_is_invalid_and_says_why():
    scored = score_case(ALARM, None, [_call("set_alarm", '{"hour": 7, "minute": ')])
    assert scored.metrics == {"correct": 0.0, "valid_call": 0.0, "right_function": 1.0}
    assert not scored.valid and "arguments are not JSON" in scored.errors[0]


def test_a_schema_invalid_argument_is_invalid_and_named():
    scored = score_case(ALARM, None, [_call("set_alarm", '{"hour": 25, "minute": 30}')])
    assert scored.metrics["valid_call"] == 0.0 and scored.metrics["correct"] == 0.0
    assert any("hour" in e and "maximum of 23" in e for e in scored.errors)
    wrong_type = score_case(ALARM, None, [_call("set_alarm", '{"hour": "seven", "minute": 30}')])
    assert wrong_type.metrics["valid_call"] == 0.0 and any("not of type 'integer'" in e for e in wrong_type.errors)


def test_a_tool_that_was_not_offered_and_two_calls_where_one_is_allowed_are_invalid():
    unknown = score_case(ALARM, None, [_call("book_flight", '{}')])
    assert unknown.metrics["valid_call"] == 0.0 and "no tool of that name" in unknown.errors[0]
    two = score_case(ALARM, None, [_call("set_alarm", '{"hour": 7, "minute": 30}'),
                                   _call("get_weather", '{"city": "Oslo"}')])
    assert two.metrics["valid_call"] == 0.0 and two.metrics["correct"] == 0.0
    assert any("parallel_tool_calls false" in e for e in two.errors)


def test_a_call_where_none_was_due_is_wrong_but_not_malformed_and_no_call_is_right():
    called = score_case(CHAT, None, [_call("set_alarm", '{"hour": 7, "minute": 30}')])
    assert called.metrics == {"correct": 0.0, "valid_call": 1.0, "right_function": 0.0}
    assert called.errors == ["a call where none was due"]
    answered = score_case(CHAT, "Hello! How can I help?", [])
    assert answered.metrics == {"correct": 1.0, "valid_call": 1.0, "right_function": 1.0}


def test_a_call_left_in_the_text_by_a_parser_that_did_not_read_it_is_no_call():
    text = '<tool_call>\n{"name": "set_alarm", "arguments": {"hour": 7, "minute": 30}}\n</tool_call>'
    scored = score_case(ALARM, text, [])
    assert scored.metrics == {"correct": 0.0, "valid_call": 0.0, "right_function": 0.0}
    assert "did not read as one" in scored.errors[0] and scored.answer == text


def test_wrong_arguments_are_valid_but_not_correct():
    scored = score_case(ALARM, None, [_call("set_alarm", '{"hour": 7, "minute": 45}')])
    assert scored.metrics == {"correct": 0.0, "valid_call": 1.0, "right_function": 1.0}


def test_a_refused_schema_feature_is_marked_refused_and_scored_zero():
    scored = score_refused(ALARM, "http_400: grammar backend does not support 'pattern'")
    assert scored.refused and "pattern" in scored.refused
    assert scored.metrics == {"correct": 0.0, "valid_call": 0.0, "right_function": 0.0}
    row = row_of("eh_tools", 0, ALARM, {"id": "t1", "refused": "http_400: unsupported"}, 1234)
    assert row["refused"] and row["finish_reason"] == "refused" and row["valid"] is False
    summary = summarize("eh_tools", "tools", 1, [row, row_of("eh_tools", 1, CHAT, {"id": "t2", "content": "Hi",
                                                                                  "tool_calls": [],
                                                                                  "finish_reason": "stop"}, 1234)],
                        2, None)
    assert summary["calls"]["refused"] == 1 and summary["calls"]["valid"] == 1 and summary["value"] == 0.5
    assert summary["calls"]["by_way"]["required"] == {"cases": 1, "valid": 0, "correct": 0, "refused": 1}


PERSON = Case(id="j1", kind="json", way="person", expected={"name": "Maria", "age": 34, "colors": ["red", "blue"]},
              request={"messages": [{"role": "user", "content": "Extract."}], "response_format": {
                  "type": "json_schema", "json_schema": {"name": "p", "schema": {
                      "type": "object", "additionalProperties": False, "required": ["name", "age", "colors"],
                      "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                                     "colors": {"type": "array", "items": {"type": "string"}}}}}}})


def test_json_answers_valid_correct_in_any_array_order_and_case():
    assert score_case(PERSON, '{"name": "maria ", "age": 34, "colors": ["blue", "red"]}', []).metrics == \
        {"correct": 1.0, "valid_json": 1.0}
    wrong = score_case(PERSON, '{"name": "Maria", "age": 43, "colors": []}', [])
    assert wrong.metrics == {"correct": 0.0, "valid_json": 1.0}


def test_json_that_breaks_its_schema_or_is_not_json_is_invalid():
    extra = score_case(PERSON, '{"name": "Maria", "age": "34", "colors": [], "city": "Lisbon"}', [])
    assert extra.metrics["valid_json"] == 0.0
    assert any("age" in e and "not of type 'integer'" in e for e in extra.errors)
    assert any("Additional properties" in e for e in extra.errors)
    prose = score_case(PERSON, "Maria is 34 years old.", [])
    assert prose.metrics == {"correct": 0.0, "valid_json": 0.0} and prose.errors[0].startswith("not JSON")
    assert score_case(PERSON, "", []).errors == ["no content"]


def test_the_request_is_the_case_body_greedy_with_the_repeat_seed_and_the_budget():
    params = request_params(ALARM, {"model": "m", "seed": 1235, "max_gen_toks": 64,
                                    "gen_kwargs": {"until": ["\n"], "temperature": 0.6},
                                    "chat_template_kwargs": {"enable_thinking": False}})
    assert params["tools"] == ALARM.request["tools"] and params["tool_choice"] == "required"
    assert params["seed"] == 1235 and params["max_tokens"] == 64 and params["temperature"] == 0.6
    assert "until" not in params and params["extra_body"] == {"chat_template_kwargs": {"enable_thinking": False}}
    assert request_params(PERSON, {"model": "m"})["temperature"] == 0.0


def test_calls_tasks_are_found_by_name_and_bad_files_are_named(tmp_path):
    assert calls_task_path("eh_tools") == SHIPPED / "eh_tools.jsonl"
    assert calls_task_path("eh_capitals") is None
    (tmp_path / "my_calls.jsonl").write_text('{"id": "a", "kind": "tools", "request": {}}\n{"id": "b"}\n')
    assert calls_task_path("my_calls", str(tmp_path)) == tmp_path / "my_calls.jsonl"
    with pytest.raises(CallsDataError, match=r"my_calls.jsonl, line 2: kind: Field required"):
        load_cases(tmp_path / "my_calls.jsonl")


def test_a_case_asked_otherwise_never_pairs_with_its_old_version():
    """The order of tools, and of a schema's properties, is what the model is shown and writes in: another question."""
    reordered = ALARM.model_copy(update={"request": {**ALARM.request, "tools": list(reversed(ALARM.request["tools"]))}})
    assert reordered.prompt_hash() != ALARM.prompt_hash() and reordered.hash() != ALARM.hash()
    assert ALARM.model_copy().prompt_hash() == ALARM.prompt_hash()


def test_validate_notes_what_each_engines_flags_mean_for_the_calls_tasks():
    from evalharness.serving.engines import ENGINES

    def calls_flag_notes(engine: str, args: dict, kinds: set) -> list[str]:  # each engine's module says it
        return ENGINES[engine].calls_flag_notes(args, kinds)

    hermes = {"--enable-auto-tool-choice": True, "--tool-call-parser": "hermes"}
    assert calls_flag_notes("vllm", hermes, {"tools", "json"}) == []
    assert "refused" in calls_flag_notes("vllm", {"--tool-call-parser": "hermes"}, {"tools"})[0]
    assert calls_flag_notes("vllm", {}, {"json"}) == []  # JSON needs no tool parser
    assert "as text" in calls_flag_notes("sglang", {}, {"tools"})[0]
    none = calls_flag_notes("sglang", {"--tool-call-parser": "qwen25", "--grammar-backend": "none"}, {"json"})
    assert len(none) == 1 and "refuses" in none[0]
    assert calls_flag_notes("sglang", {"--grammar-backend": "none"}, set()) == []  # no calls task, nothing to say
    assert calls_flag_notes("external", {}, {"tools", "json"}) == []  # launched by someone else: no flags to read


def test_a_relative_path_in_a_flag_value_is_the_matrix_files(tmp_path):
    from evalharness.serving.engines import load_matrix

    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "x.yaml").write_text(
        "name: x\nengine: vllm\nmodel: some/model\ncommand: [python, -m, vllm.entrypoints.openai.api_server]\n"
        "args: {--chat-template: ../t/tools.jinja, --dtype: float32}\n"
        "axes:\n  p:\n    a: {args: {--generation-config: ./gen}}\n    b: {args: {--tool-call-parser: hermes}}\n")
    matrix, cells, _ = load_matrix(tmp_path / "m" / "x.yaml")
    assert matrix.args["--chat-template"] == str(tmp_path / "t" / "tools.jinja") and matrix.args["--dtype"] == "float32"
    by_id = {c.id: c.args for c in cells}
    assert by_id["p-a"]["--generation-config"] == str(tmp_path / "m" / "gen")
    assert by_id["p-b"]["--tool-call-parser"] == "hermes" and by_id["p-b"]["--chat-template"].endswith("tools.jinja")


def test_a_case_asked_with_other_template_switches_never_pairs():
    """The chat template switches sent (enable_thinking) change what the engine renders: the prompt key folds them in,
    as the lm-eval worker's does (_lmeval_results.prompt_key)."""
    answer = {"id": "t2", "content": "Hi", "tool_calls": [], "finish_reason": "stop"}
    plain = row_of("eh_tools", 0, CHAT, answer, 1234)
    off = row_of("eh_tools", 0, CHAT, answer, 1234, {"enable_thinking": False})
    assert plain["prompt_key"] == plain["prompt_hash"] == off["prompt_hash"]
    assert off["prompt_key"] != plain["prompt_key"]
    assert row_of("eh_tools", 0, CHAT, answer, 1234, {"enable_thinking": False})["prompt_key"] == off["prompt_key"]
