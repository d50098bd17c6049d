"""Scores one answer to one calls case (pure: the case and the answer's message in, per-case figures out).

Tool calls (kind "tools"), each 0/1:
- `valid_call`: every call names a tool the request offered, its arguments parse as a JSON object that validates
  against that tool's parameter schema (jsonschema, Draft 2020-12), no more calls than `parallel_tool_calls: false`
  allows, and, when a call is due, there is one. No call where none is due is valid.
- `right_function`: the first call names the expected tool; where none is due, no call was made.
- `correct` (the headline): exactly one call, the expected tool, the expected arguments; where none is due, no call.
Arguments are compared after normalizing: strings by their case-folded, stripped text, numbers by value (3 == 3.0),
arrays of scalars in any order (the attendees of an event, the colors of a flag), and an argument the request did not
state counts only when it equals its schema's `default`.
JSON (kind "json"):
- `valid_json`: the content parses as JSON and validates against the request's schema.
- `correct`: it equals the expected value, compared as above.

`errors` says what was wrong, each naming where (`call 1 (set_alarm): hour: 25 is greater than the maximum of 23`),
for the report's viewer. A request the engine refused (HTTP 4xx: a schema feature its grammar backend lacks, a tool
choice it is not launched for) is scored 0 on every figure and marked `refused` with the engine's words: the report
counts refusals apart, never as wrong answers without saying so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from evalharness.measures.calls.cases import Case

CALL_IN_TEXT = ("<tool_call>", "[TOOL_CALLS]", '"arguments"', '"parameters"')


@dataclass
class CaseScore:
    metrics: dict[str, float]
    valid: bool  # valid_call or valid_json: the secondary endpoint the report pairs
    errors: list[str] = field(default_factory=list)
    refused: str | None = None  # the engine's words when it refused the request
    answer: str = ""  # what came back, as text: the content, or the calls as JSON


def _normal(value: Any) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        return value.strip().casefold()
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items()}
    if isinstance(value, list):
        items = [_normal(v) for v in value]
        if all(not isinstance(v, (dict, list)) for v in items):
            return sorted(items, key=repr)
        return items
    return value


def _drop_defaults(arguments: dict, expected: dict, schema: dict) -> dict:
    """The arguments without those the request did not state and that equal their schema's default."""
    properties = schema.get("properties") or {}
    return {k: v for k, v in arguments.items()
            if k in expected or "default" not in (properties.get(k) or {}) or v != properties[k]["default"]}


def same_value(answer: Any, expected: Any) -> bool:
    return _normal(answer) == _normal(expected)


def schema_errors(value: Any, schema: dict, where: str) -> list[str]:
    try:
        validator = Draft202012Validator(schema)
        found = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    except SchemaError as exc:
        return [f"{where}: the schema itself is invalid ({exc.message})"]
    out = []
    for error in found[:5]:
        path = ".".join(str(p) for p in error.absolute_path)
        out.append(f"{where}: {path + ': ' if path else ''}{error.message}")
    return out


def _tools_by_name(case: Case) -> dict[str, dict]:
    out = {}
    for tool in case.request.get("tools") or []:
        function = tool.get("function") or {}
        if function.get("name"):
            out[function["name"]] = function.get("parameters") or {"type": "object"}
    return out


def _parse_arguments(raw: Any) -> tuple[Any, str | None]:
    if isinstance(raw, dict):
        return raw, None
    try:
        parsed = json.loads(raw or "")
    except (TypeError, ValueError) as exc:
        return None, f"arguments are not JSON ({str(exc)[:80]})"
    if not isinstance(parsed, dict):
        return None, f"arguments are JSON {type(parsed).__name__}, not an object"
    return parsed, None


def score_tools(case: Case, content: str | None, calls: list[dict]) -> CaseScore:
    """`calls`: the message's tool_calls as dicts ({"function": {"name", "arguments"}})."""
    offered = _tools_by_name(case)
    errors: list[str] = []
    parsed_calls: list[tuple[str, Any]] = []
    for i, call in enumerate(calls, 1):
        function = call.get("function") or {}
        name = function.get("name") or ""
        where = f"call {i} ({name or 'no name'})"
        arguments, problem = _parse_arguments(function.get("arguments"))
        if name not in offered:
            errors.append(f"{where}: no tool of that name was offered")
        if problem:
            errors.append(f"{where}: {problem}")
        elif name in offered:
            errors += schema_errors(arguments, offered[name], where)
        parsed_calls.append((name, arguments))
    if case.request.get("parallel_tool_calls") is False and len(calls) > 1:
        errors.append(f"{len(calls)} calls where the request allows one (parallel_tool_calls false)")
    text = content or ""
    if case.call_due and not calls:
        leaked = any(marker in text for marker in CALL_IN_TEXT)
        errors.append("no call" + (": a call written in the text, which the engine's tool parser did not read as "
                                   "one" if leaked else ""))
    expected = case.expected
    if expected is None:
        right = correct = not calls
        if calls:
            errors.append("a call where none was due")
    else:
        right = bool(parsed_calls) and parsed_calls[0][0] == expected["name"]
        schema = offered.get(expected["name"], {})
        correct = (len(parsed_calls) == 1 and right and isinstance(parsed_calls[0][1], dict)
                   and same_value(_drop_defaults(parsed_calls[0][1], expected["arguments"], schema),
                                  expected["arguments"]))
    valid = not [e for e in errors if e != "a call where none was due"]
    answer = json.dumps([{"name": n, "arguments": a} for n, a in parsed_calls], ensure_ascii=False) if calls else text
    return CaseScore(metrics={"correct": float(correct), "valid_call": float(valid), "right_function": float(right)},
                     valid=valid, errors=errors, answer=answer)


def score_json(case: Case, content: str | None) -> CaseScore:
    text = (content or "").strip()
    schema = ((case.request.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        return CaseScore(metrics={"correct": 0.0, "valid_json": 0.0}, valid=False, answer=content or "",
                         errors=[f"not JSON ({str(exc)[:80]})" if text else "no content"])
    errors = schema_errors(value, schema, "content")
    valid = not errors
    correct = same_value(value, case.expected)
    return CaseScore(metrics={"correct": float(correct), "valid_json": float(valid)}, valid=valid, errors=errors,
                     answer=content or "")


def score_refused(case: Case, message: str) -> CaseScore:
    names = ("correct", "valid_call", "right_function") if case.kind == "tools" else ("correct", "valid_json")
    return CaseScore(metrics={name: 0.0 for name in names}, valid=False, refused=message[:300],
                     errors=[f"refused by the engine: {message[:200]}"])


def score_case(case: Case, content: str | None, calls: list[dict]) -> CaseScore:
    return score_tools(case, content, calls) if case.kind == "tools" else score_json(case, content)
