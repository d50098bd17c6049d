"""lm-eval's standard tasks through the real embedded engine (issue 15): its own gsm8k config (two filters) and its
mmlu_pro group (14 subtasks) on small data files in the hub datasets' schema that the test writes
(tests/standard_data.py), and a reasoning model's answer shape.

Standard tasks: one run of two cells on the session's shared engine (engine external: both cells only read from it):
`ref` and `rerun`, the same configuration run twice. Drift, flips and the gate must pair on the headline filter
(strict-match, the first of gsm8k's config), one record per document; every subtask of the group must be paired. The
baseline is made by the test from the `ref` cell (`baseline save`) and gated with the `rerun` cell: a baseline of
these tasks passes against a rerun of the same configuration.

Reasoning: SmolLM2 cannot think, so the cells' server is the fault proxy (tests/faults/fault_engine.py, `think`
action) in front of the real shared engine: the engine-facing part (probes, lm-eval's gsm8k through the chat
endpoint, finish reasons, token counts) is the real engine's; only the reasoning shape is injected, each chat answer
getting a `reasoning_content` beside the engine's own content. The injected reasoning holds an answer of its own
("#### 12345") that must never be scored.
"""

from __future__ import annotations

import json
import sys
import time

import pytest

from tests.integration.conftest import (BASE_ENV, ENGINE_MODULE, FAULT_ENGINE, SERVED_NAME, engine_processes,
                                        run_harness)
from tests.standard_data import MMLU_PRO_CATEGORIES, write_gsm8k, write_mmlu_pro

pytestmark = [pytest.mark.engine, pytest.mark.timeout(1500)]  # a safety limit, about 3x a 2-core machine's time

GSM8K_DOCS = 6
MMLU_PRO_PER_CATEGORY = 1


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def standard_run(shared_engine, tmp_path_factory):
    folder = tmp_path_factory.mktemp("standard")
    data = {"gsm8k": {"data_files": write_gsm8k(folder / "data", GSM8K_DOCS)},
            "mmlu_pro": {"data_files": write_mmlu_pro(folder / "data", MMLU_PRO_PER_CATEGORY)}}
    matrix = {
        "name": "standard-tasks", "engine": "external", "base_url": f"{shared_engine.root_url}/v1",
        "model": SERVED_NAME, "axes": {"cell": {"ref": None, "rerun": None}},
        "probes": {"enabled": False}, "distribution": {"enabled": False},
        "quality": {"tasks": ["gsm8k", "mmlu_pro"], "include_defaults": True, "api": "completions",
                    "tokenizer": "none", "concurrency": 4, "max_gen_toks": 48,
                    # a budget of its own (mmlu_pro's config asks 2048, more than this engine's context)
                    "task_settings": {"mmlu_pro": {"max_gen_toks": 24}}, "data": data},
    }
    path = folder / "matrix.yaml"
    path.write_text(json.dumps(matrix, indent=1))  # JSON is YAML
    out = folder / "out"
    begin = time.monotonic()
    proc = run_harness("run", "--matrix", str(path), "--out", str(out), timeout=1200)
    print(f"standard tasks: run took {time.monotonic() - begin:.0f}s")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads((out / "results.json").read_text())
    for cid, cell in results["cells"].items():
        assert cell["status"] == "ok", f"{cid}: {cell['reason']}"
        print(f"{cid}: quality " + ", ".join(f"{t['task']} {t['seconds']}s" for t in cell["quality"]))
    return out, results


def _score(results, cid, task):
    return next(t for t in results["cells"][cid]["quality"] if t["task"] == task)


def test_gsm8k_keeps_both_filters_and_its_headline_is_strict_match(standard_run):
    out, results = standard_run
    score = _score(results, "cell-ref", "gsm8k")
    assert score["metric"] == "exact_match,strict-match" and score["n"] == GSM8K_DOCS
    rows = _rows(out / score["samples"])
    assert sorted({r["filter"] for r in rows}) == ["flexible-extract", "strict-match"] and len(rows) == 2 * GSM8K_DOCS
    strict = [r["metrics"]["exact_match"] for r in rows if r["filter"] == "strict-match"]
    assert score["value"] == pytest.approx(sum(strict) / len(strict))
    assert score["generation"]["requests"] == GSM8K_DOCS  # one answer per document, shared by both filters


def test_drift_and_flips_pair_each_document_once_on_the_headline_filter(standard_run):
    out, results = standard_run
    [drift] = [t for t in results["cells"]["cell-rerun"]["drift"]["tasks"] if t["task"] == "gsm8k"]
    assert drift["comparable"] and drift["metric"] == "exact_match,strict-match" and drift["paired"] == GSM8K_DOCS

    def strict(cid):
        rows = _rows(out / _score(results, cid, "gsm8k")["samples"])
        return {r["doc_id"]: r["metrics"]["exact_match"] for r in rows if r["filter"] == "strict-match"}

    ref, rerun = strict("cell-ref"), strict("cell-rerun")
    assert drift["reference"] == pytest.approx(sum(ref.values()) / GSM8K_DOCS)
    assert drift["cell"] == pytest.approx(sum(rerun.values()) / GSM8K_DOCS)
    assert drift["right_to_wrong"] == sum(ref[d] == 1 and rerun[d] == 0 for d in ref)
    assert drift["wrong_to_right"] == sum(ref[d] == 0 and rerun[d] == 1 for d in ref)


def test_every_subtask_of_the_group_is_kept_and_paired(standard_run):
    out, results = standard_run
    score = _score(results, "cell-ref", "mmlu_pro")
    subtasks = [f"mmlu_pro_{c.replace(' ', '_')}" for c in MMLU_PRO_CATEGORIES]
    assert score["metric"] == "exact_match,custom-extract" and sorted(score["subtasks"]) == sorted(subtasks)
    assert all(s["n"] == MMLU_PRO_PER_CATEGORY and s["version"] is not None for s in score["subtasks"].values())
    rows = _rows(out / score["samples"])
    assert len(rows) == len(subtasks) * MMLU_PRO_PER_CATEGORY and {r["task"] for r in rows} == set(subtasks)
    [drift] = [t for t in results["cells"]["cell-rerun"]["drift"]["tasks"] if t["task"] == "mmlu_pro"]
    assert drift["comparable"] and drift["paired"] == len(rows)
    assert drift["subtasks_paired"] == {s: MMLU_PRO_PER_CATEGORY for s in subtasks}
    # lm-eval's own pooling (by size) is what the report shows; the paired records pool the same documents
    values = [r["metrics"]["exact_match"] for r in rows]
    assert score["value"] == pytest.approx(sum(values) / len(values))
    # answers cut off by the task's own budget (24 tokens), counted per request from the engine's finish_reason
    generation = score["generation"]
    assert generation["requests"] == len(rows) and generation["mean_completion_tokens"] > 0
    assert generation["truncated"] == sum(r["finish_reason"] == "length" for r in rows)


def test_the_report_names_each_headline(standard_run):
    out, _ = standard_run
    report = (out / "report.md").read_text()
    assert "## Quality tasks" in report
    assert r"exact\_match / strict-match" in report and r"exact\_match / custom-extract" in report  # Markdown-escaped


def test_a_baseline_of_the_standard_tasks_passes_against_a_rerun(standard_run, tmp_path):
    out, _ = standard_run
    baseline = tmp_path / "standard.json"
    proc = run_harness("baseline", "save", str(out), "--output", str(baseline), "--cell", "cell-ref", timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    saved = json.loads(baseline.read_text())["cells"]["cell-ref"]["tasks"]
    assert len(saved["gsm8k"]["correct"]) == GSM8K_DOCS
    assert all(key.endswith("|strict-match|exact_match") for key in saved["gsm8k"]["correct"])
    assert len(saved["mmlu_pro"]["correct"]) == len(MMLU_PRO_CATEGORIES) * MMLU_PRO_PER_CATEGORY
    assert len(saved["mmlu_pro"]["subtask_versions"]) == len(MMLU_PRO_CATEGORIES)
    verdict = tmp_path / "gate.json"
    proc = run_harness("gate", str(out), "--baseline", str(baseline), "--cell", "cell-rerun=cell-ref", "--json",
                       str(verdict), timeout=300)
    # a handful of documents per task cannot show a 0.05 margin either way: nothing fails, and the gate says it
    # cannot vouch (exit 3) rather than pass; every document of every task was paired with the baseline's
    assert proc.returncode in (0, 3), proc.stdout + proc.stderr
    assert "gate: FAIL" not in proc.stdout
    [cell] = json.loads(verdict.read_text())["cells"]
    assert cell["violations"] == [] and {t["task"]: t["paired"] for t in cell["tasks"]} == {
        task: len(saved[task]["correct"]) for task in saved}


INJECTED = "Let me think. Maybe the answer is 12345.\n#### 12345\nNo: I should count again before I answer."
SOUP = "}{][)(*&^%$#@!~}{][)(*&^%$#@!~}{][)(*&^%$#@!~}{][)(*&^%$#@!~}{][)(*&^%$#@!~"


@pytest.fixture(scope="module")
def reasoning_run(engine, shared_engine, calibration, tmp_path_factory):
    folder = tmp_path_factory.mktemp("reasoning")
    data = {"gsm8k": {"data_files": write_gsm8k(folder / "data", 4)}}

    def thinking(text: str) -> dict:
        return {"env": {"EH_FAULTS": json.dumps({"rules": [{"match": {"path": "/v1/chat/completions"},
                                                           "action": "think", "reasoning": text}]})}}

    matrix = {
        "name": "reasoning", "engine": "vllm", "model": engine["model"], "served_model_name": SERVED_NAME,
        "command": [sys.executable, str(FAULT_ENGINE), "--upstream", shared_engine.root_url, "--", engine["python"],
                    *ENGINE_MODULE],
        "args": shared_engine.args, "env": BASE_ENV,
        "axes": {"reasoning": {"prose": thinking(INJECTED), "soup": thinking(SOUP)}},
        "timeouts": {"startup_s": 300, "teardown_grace_s": 20, "request_s": calibration.request_s},
        "distribution": {"enabled": False},
        # the probes' own budget: the proxy's thinking makes the cell reason, and 768 tokens (2048 within the
        # served 1024) would take minutes on 2 cores; the budget is tested in test_reasoning_loops.py
        "probes": {"reasoning_max_tokens": 64},
        "quality": {"tasks": ["gsm8k"], "include_defaults": True, "api": "chat", "tokenizer": "none",
                    "max_gen_toks": 16, "chat_template_kwargs": {"enable_thinking": True}, "data": data},
    }
    path = folder / "matrix.yaml"
    path.write_text(json.dumps(matrix, indent=1))
    out = folder / "out"
    proc = run_harness("run", "--matrix", str(path), "--out", str(out), timeout=1200)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cells = json.loads((out / "results.json").read_text())["cells"]
    # other sessions may run engines on this machine: only this run's proxies (and what they started) are checked
    assert all(not c["teardown"]["leftover"] for c in cells.values())
    assert [p for p in engine_processes() if shared_engine.root_url in " ".join(p.cmdline())] == []
    return out, cells


def test_a_reasoning_answer_is_scored_on_its_content_with_its_reasoning_saved(reasoning_run):
    out, cells = reasoning_run
    cell = cells["reasoning-prose"]
    assert cell["status"] == "ok", cell["reason"]
    [score] = cell["quality"]
    rows = _rows(out / score["samples"])
    assert rows and all(r["reasoning"] == INJECTED for r in rows)  # saved per sample, apart from the answer
    for row in rows:
        assert "12345" not in str(row["answer"]) and "12345" not in str(row["response"])  # never scored
    generation = score["generation"]
    assert generation["requests"] == 4 and generation["with_reasoning"] == 4
    assert generation["mean_reasoning_chars"] == len(INJECTED)
    # the real engine's finish reasons: 16 tokens cut SmolLM2's rambling chat answers off
    per_request = {r["prompt_hash"]: r["finish_reason"] for r in rows}
    assert generation["truncated"] == sum(f == "length" for f in per_request.values()) > 0
    report = (out / "report.md").read_text()
    assert f"{generation['truncated'] / 4:.1%} ({generation['truncated']}/4)" in report


def test_probes_judge_the_reasoning_too(reasoning_run):
    out, cells = reasoning_run
    prose = _rows(out / "cells" / "reasoning-prose" / "probes.jsonl")
    assert all(p["reasoning"] == INJECTED and p["output"] for p in prose)  # the engine's answer, and the reasoning
    assert cells["reasoning-prose"]["probes"]["garbage"] is False
    soup = cells["reasoning-soup"]
    assert soup["status"] == "garbage" and soup["phase"] == "probes", soup["reason"]
    # marked for its reasoning: the answers are the same engine's as in the prose cell
    findings = [f["detector"] for p in soup["probes"]["offending"] for f in p["findings"]]
    assert any(name.startswith("reasoning:") for name in findings), findings


def test_absent_data_stops_the_run_before_anything_is_launched(engine, tmp_path, monkeypatch):
    """No local files and an empty hub cache: lm-eval's own gsm8k and ifeval cannot load (ifeval's scorer is not
    installed here either). Exit 2 names each task and what is missing; no server, no output folder."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty-hf-home"))  # whatever this machine has cached
    matrix = {"name": "absent", "engine": "vllm", "model": engine["model"], "served_model_name": SERVED_NAME,
              "command": [engine["python"], *ENGINE_MODULE], "env": BASE_ENV,
              "quality": {"tasks": ["gsm8k", "ifeval"], "include_defaults": True, "api": "chat", "tokenizer": "none"}}
    path = tmp_path / "matrix.yaml"
    path.write_text(json.dumps(matrix))
    proc = run_harness("run", "--matrix", str(path), "--out", str(tmp_path / "out"), timeout=600)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "task gsm8k: dataset 'openai/gsm8k' (config 'main') could not be loaded offline" in proc.stderr
    assert "task ifeval: " in proc.stderr and "nothing was launched" in proc.stderr
    assert not (tmp_path / "out").exists()
