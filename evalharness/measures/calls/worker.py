"""Runs one calls task (tool calls or JSON output) against one endpoint, in its own process, and writes what the
harness reads back in the same files as the lm-eval worker, so phases/quality.py runs both alike (retries, repeats
with seeds, looks, resume):

Usage: python -m evalharness.measures.calls.worker SPEC.json
SPEC: the lm-eval worker's ({task, base_url, model, concurrency, timeout_s, max_retries, limit, subset, subset_seed,
       fraction, max_gen_toks, gen_kwargs, chat_template_kwargs, seed, out_dir}) and `calls_data`, the cases' file.
Writes OUT_DIR/summary.json (headline `correct,none`, its mean and standard error, generation statistics, the valid and
refused counts), OUT_DIR/samples.jsonl (one lm-eval-shaped row per case: doc_id, doc_hash, prompt_hash, metrics, and
the answer, its calls, `valid`, `errors` and `refused`) and OUT_DIR/answers.jsonl, the answers as they came: an attempt
run again after a failure (the server still up) sends only the cases not yet answered.

Each case is one chat completion: its own request body (tools, tool_choice and parallel_tool_calls, or
response_format), greedy unless the matrix's gen_kwargs say otherwise, `max_gen_toks` tokens (default 256), and the
repeat's seed. HTTP 4xx is the engine refusing the request (a schema feature its grammar backend lacks, tool_choice
auto on a server launched without a tool parser): recorded as `refused` with its words, never retried.
"""

from __future__ import annotations

import json
import math
import sys
import threading
from pathlib import Path
from typing import Any

from evalharness.phases._lmeval_results import generation_stats, prompt_key, read_answers
from evalharness.measures.calls.cases import Case, load_cases
from evalharness.measures.calls.score import CaseScore, score_case, score_refused
from evalharness.phases.openai_api import Endpoint
from evalharness.phases.retries import RequestFailed, map_in_threads
from evalharness.phases.subsets import subset_indices

DEFAULT_MAX_TOKENS = 256
LM_EVAL_ONLY = ("until", "do_sample", "max_gen_toks")  # lm-eval generation keys that are not API parameters


def request_params(case: Case, spec: dict[str, Any]) -> dict[str, Any]:
    """The chat completion sent for a case (pure)."""
    extra = {k: v for k, v in (spec.get("gen_kwargs") or {}).items() if k not in LM_EVAL_ONLY}
    params = {"temperature": 0.0, **extra, **case.request, "model": spec["model"],
              "max_tokens": int(spec.get("max_gen_toks") or DEFAULT_MAX_TOKENS), "seed": int(spec.get("seed", 1234))}
    if spec.get("chat_template_kwargs"):
        params["extra_body"] = {"chat_template_kwargs": spec["chat_template_kwargs"]}
    return params


def answer_of(case: Case, params: dict[str, Any], api: Endpoint) -> dict[str, Any]:
    """One case's answer as a plain record: content, tool calls, finish reason, tokens; or `refused` / `error`."""
    try:
        reply = api.chat(**params)
    except RequestFailed as exc:
        if exc.kind.startswith("http_4") and exc.kind != "http_429":
            return {"id": case.id, "refused": str(exc)}  # "http_400: <the engine's words>"
        return {"id": case.id, "error": str(exc)}
    choice = reply.choices[0] if reply.choices else None
    message = choice.message if choice is not None else None
    calls = [{"function": {"name": c.function.name, "arguments": c.function.arguments}}
             for c in (getattr(message, "tool_calls", None) or []) if getattr(c, "function", None) is not None]
    extra = getattr(message, "model_extra", None) or {}
    usage = getattr(reply, "usage", None)
    return {"id": case.id, "content": getattr(message, "content", None), "tool_calls": calls,
            "reasoning": extra.get("reasoning_content") or extra.get("reasoning"),
            "finish_reason": getattr(choice, "finish_reason", None),
            "completion_tokens": getattr(usage, "completion_tokens", None)}


def row_of(task: str, index: int, case: Case, answer: dict[str, Any], seed: int,
           chat_template_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """lm-eval's per-sample row for one case (analysis/pairing.py pairs it), with what the scorer found; its prompt
    key folds in the chat template switches it was sent with, as the lm-eval worker's does."""
    scored: CaseScore = (score_refused(case, answer["refused"]) if answer.get("refused") else
                         score_case(case, answer.get("content"), answer.get("tool_calls") or []))
    prompt_hash = case.prompt_hash()
    return {"task": task, "doc_id": index, "doc_hash": case.hash(), "prompt_hash": prompt_hash,
            "prompt_key": prompt_key(prompt_hash, chat_template_kwargs), "case": case.id, "kind": case.kind,
            "way": case.way, "target": case.expected,
            "response": answer.get("tool_calls") if case.kind == "tools" else answer.get("content"),
            "answer": scored.answer, "filter": "none", "metrics": scored.metrics, "prompt": case.prompt_text(),
            "seed": seed, "finish_reason": answer.get("finish_reason") or ("refused" if scored.refused else None),
            "completion_tokens": answer.get("completion_tokens"), "reasoning": answer.get("reasoning"),
            "valid": scored.valid, "errors": scored.errors, "refused": scored.refused}


def summarize(task: str, kind: str, version: int, rows: list[dict], total: int,
              subset: dict[str, Any] | None) -> dict[str, Any]:
    """summary.json as the lm-eval worker writes it (phases/_lmeval_results.py), and the calls' own counts."""
    values = [row["metrics"]["correct"] for row in rows]
    n = len(values)
    mean = sum(values) / n if n else None
    stderr = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1) / n) if n > 1 else None
    answered = [{"content": row["answer"], "finish_reason": row["finish_reason"], "reasoning": row["reasoning"],
                 "completion_tokens": row["completion_tokens"]} for row in rows if not row["refused"]]
    by_way: dict[str, dict[str, int]] = {}
    for row in rows:
        tally = by_way.setdefault(row["way"] or kind, {"cases": 0, "valid": 0, "correct": 0, "refused": 0})
        tally["cases"] += 1
        tally["valid"] += bool(row["valid"])
        tally["correct"] += row["metrics"]["correct"] == 1.0
        tally["refused"] += bool(row["refused"])
    metric_names = list(rows[0]["metrics"]) if rows else []
    return {"task": task, "version": version, "headline": "correct,none", "value": mean, "stderr": stderr, "n": n,
            "aggregation": "mean", "higher_is_better": True, "subtasks": {},
            "metrics": {f"{m},none": sum(r["metrics"][m] for r in rows) / n for m in metric_names} if n else {},
            "generation": generation_stats(answered) if answered else None, "subset": subset,
            "calls": {"kind": kind, "cases": n, "valid": sum(bool(r["valid"]) for r in rows),
                      "refused": sum(bool(r["refused"]) for r in rows), "by_way": by_way, "of": total}}


def main(spec_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    out_dir = Path(spec["out_dir"])
    cases = load_cases(Path(spec["calls_data"]))
    task, seed = spec["task"], int(spec.get("seed", 1234))
    first = spec.get("subset", "random") == "first"
    fraction = float(spec.get("fraction") or 1.0)
    subset_seed = int(spec.get("subset_seed", 1234))
    skip = int(spec.get("skip") or 0)
    indices = subset_indices(task, len(cases), spec.get("limit"), subset_seed, fraction, first, skip)
    journal = out_dir / "answers.jsonl"
    answers = read_answers(journal, key="id")  # a failed attempt's answers: only the rest are sent again
    lock = threading.Lock()

    def ask(index: int) -> dict[str, Any]:
        case = cases[index]
        if case.id in answers:
            return answers[case.id]
        answer = answer_of(case, request_params(case, spec), api)
        if not answer.get("error"):
            with lock, open(journal, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(answer, ensure_ascii=False) + "\n")
        return answer

    with Endpoint(spec["base_url"], float(spec.get("timeout_s", 300)), retries=int(spec.get("max_retries", 5))) as api:
        got = map_in_threads(ask, indices, int(spec.get("concurrency") or 4))
    failed = [a for a in got if a.get("error")]
    if failed:
        print(f"{len(failed)} of {len(got)} requests failed after retries; first: {failed[0]['error'][:300]}",
              file=sys.stderr)
        return 1
    rows = [row_of(task, index, cases[index], answer, seed, spec.get("chat_template_kwargs"))
            for index, answer in zip(indices, got)]
    subset = None
    if len(indices) < len(cases):
        subset = {"seed": None if first else subset_seed, "documents": len(indices), "of": len(cases),
                  "fraction": fraction if fraction < 1 else None, "skipped": skip or None}
    summary = summarize(task, cases[0].kind, cases[0].version, rows, len(cases), subset)
    with open(out_dir / "samples.jsonl", "w", encoding="utf-8") as handle:
        handle.write("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
