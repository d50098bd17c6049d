"""Reasoning tasks as a thinking model answers them, on the real engine (issue 25): stop strings kept out of the
reasoning, and a sampled quality phase that resumes request by request.

SmolLM2 cannot think, so the cells' server is the fault proxy (tests/faults/fault_engine.py, `think` action) in
front of the session's shared real engine: the real engine answers lm-eval's gsm8k through the chat endpoint (its
content, finish reasons, token counts); the proxy adds a reasoning that says "Question:", gsm8k's first stop string,
and, for a request that sends that stop string, ends the answer inside the reasoning as vLLM and SGLang do.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.integration.conftest import BASE_ENV, ENGINE_MODULE, FAULT_ENGINE, HARNESS, REPO, SERVED_NAME, run_harness
from tests.standard_data import write_gsm8k

pytestmark = [pytest.mark.engine, pytest.mark.timeout(1500)]

THINKING = "Let me work it out. Question: what is asked? The total. So I add the numbers."
DOCS = 4


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _matrix(engine, shared_engine, calibration, folder, docs: int, quality: dict, env: dict | None = None) -> dict:
    faults = {"rules": [{"match": {"path": "/v1/chat/completions"}, "action": "think", "reasoning": THINKING,
                         "stop_in_reasoning": True}]}
    return {
        "name": "reasoning-tasks", "engine": "vllm", "model": engine["model"], "served_model_name": SERVED_NAME,
        "command": [sys.executable, str(FAULT_ENGINE), "--upstream", shared_engine.root_url, "--", engine["python"],
                    *ENGINE_MODULE],
        "args": shared_engine.args, "env": {**BASE_ENV, "EH_FAULTS": json.dumps(faults), **(env or {})},
        "axes": {"cell": {"only": None}},
        "timeouts": {"startup_s": 300, "teardown_grace_s": 20, "request_s": calibration.request_s},
        "probes": {"enabled": False}, "distribution": {"enabled": False},
        "quality": {"tasks": ["gsm8k"], "include_defaults": True, "api": "chat", "tokenizer": "none",
                    "max_gen_toks": 24, "data": {"gsm8k": {"data_files": write_gsm8k(folder / "data", docs)}},
                    **quality},
    }


def _run(matrix: dict, folder) -> tuple:
    path = folder / "matrix.yaml"
    path.write_text(json.dumps(matrix, indent=1))
    out = folder / "out"
    proc = run_harness("run", "--matrix", str(path), "--out", str(out), timeout=1200)
    assert proc.returncode in (0, 3), proc.stdout + proc.stderr  # 3: a verdict left inconclusive, nothing else
    [cell] = json.loads((out / "results.json").read_text())["cells"].values()
    assert cell["status"] == "ok", cell["reason"]
    [score] = cell["quality"]
    return out, score


@pytest.fixture(scope="module")
def stop_runs(engine, shared_engine, calibration, tmp_path_factory):
    """The same answers twice: stop strings sent to the engine (lm-eval's way), and kept for the answer."""
    runs = {}
    for mode in ("engine", "answer"):
        folder = tmp_path_factory.mktemp(f"stops-{mode}")
        runs[mode] = _run(_matrix(engine, shared_engine, calibration, folder, DOCS, {"stop_strings": mode}), folder)
    return runs


def test_a_stop_string_inside_the_reasoning_is_counted_when_sent_to_the_engine(stop_runs):
    out, score = stop_runs["engine"]
    rows = [r for r in _rows(out / score["samples"]) if r["filter"] == "strict-match"]
    assert len(rows) == DOCS
    assert all(r["stop_reason"] == "Question:" and r["finish_reason"] == "stop" for r in rows)
    assert all(r["reasoning"] == THINKING.split("Question:")[0] for r in rows)  # cut where the engine stopped
    assert all(r["metrics"]["exact_match"] == 0 for r in rows)  # no answer was given, so none can be right
    generation = score["generation"]
    assert generation["stop_string"] == DOCS and generation["empty"] == DOCS
    report = (out / "report.md").read_text()
    assert f"{DOCS}/{DOCS} stopped by a stop string" in report


def test_kept_for_the_answer_the_stop_string_no_longer_cuts_the_reasoning_and_the_answer_is_scored(stop_runs):
    out, score = stop_runs["answer"]
    rows = [r for r in _rows(out / score["samples"]) if r["filter"] == "flexible-extract"]
    assert len(rows) == DOCS
    assert all(r["reasoning"] == THINKING and r["stop_reason"] is None for r in rows)  # whole, and not stopped
    # the real engine's own answer is what lm-eval scored: never empty, cut at the stop string only after it
    assert all(str(r["answer"]).strip() for r in rows)
    assert all("Question:" not in str(r["answer"]) for r in rows)
    generation = score["generation"]
    assert generation["stop_string"] == 0 and generation["empty"] == 0 and generation["requests"] == DOCS


def _chat_requests(log) -> list[str]:
    if not log.exists():
        return []
    return [line for line in log.read_text().splitlines() if line.split()[1] == "/v1/chat/completions"]


def test_a_sampled_quality_phase_killed_half_way_resumes_with_only_the_missing_requests(
        engine, shared_engine, calibration, tmp_path):
    docs = 12
    log = tmp_path / "requests.log"
    # sampled (lm-eval's own cache is bypassed then), one request at a time so the kill lands between answers
    matrix = _matrix(engine, shared_engine, calibration, tmp_path, docs,
                     {"gen_kwargs": {"temperature": 0.8, "do_sample": True}, "concurrency": 1},
                     env={"EH_REQUEST_LOG": str(log)})
    path = tmp_path / "matrix.yaml"
    path.write_text(json.dumps(matrix, indent=1))
    out = tmp_path / "out"
    journal = out / "cells" / "cell-only" / "quality" / "gsm8k" / "requests.jsonl"
    harness = subprocess.Popen([*HARNESS, "run", "--matrix", str(path), "--out", str(out)], cwd=REPO,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    deadline = time.monotonic() + 900  # a safety limit: the kill itself waits for answers, not for time
    while time.monotonic() < deadline and harness.poll() is None:
        if journal.exists() and len(journal.read_text().splitlines()) >= docs // 3:
            break
        time.sleep(0.2)
    assert harness.poll() is None, "the quality phase ended before it could be interrupted"
    os.kill(harness.pid, signal.SIGINT)
    harness.communicate(timeout=300)
    assert harness.returncode == 130
    kept = journal.read_text().splitlines()
    assert docs // 3 <= len(kept) < docs
    first_run = len(_chat_requests(log))
    proc = run_harness("run", "--matrix", str(path), "--out", str(out), "--resume", timeout=1200)
    assert proc.returncode in (0, 3), proc.stdout + proc.stderr
    # only the requests not yet answered were sent again, and the kept answers are byte for byte what they were
    assert len(_chat_requests(log)) - first_run == docs - len(kept)
    after = journal.read_text().splitlines()
    assert after[: len(kept)] == kept and len(after) == docs
    [cell] = json.loads((out / "results.json").read_text())["cells"].values()
    [score] = cell["quality"]
    assert score["n"] == docs and score["error"] is None
    answered = {json.loads(line)["key"]: json.loads(line)["output"] for line in kept}
    contents = {o["choices"][0]["message"]["content"] for o in answered.values()}
    rows = [r for r in _rows(out / score["samples"]) if r["filter"] == "strict-match"]
    assert len(rows) == docs and contents <= {r["answer"] for r in rows}  # each kept answer is a scored sample
