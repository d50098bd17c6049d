"""`evalharness run` on the real SGLang 0.5.23 interrupted with SIGINT in the middle of its quality phase, then
`--resume` (issue 27): exit 130 with nothing of the real process tree left, the finished task kept and not asked
again, and the resumed run finishing the cell on a fresh launch.

One cell, two short generation tasks (tokenizer none: SGLang has no /tokenizer_info), no probes and no numerics
check: the module is two SGLang starts and a few dozen short requests, about 2-3 minutes here. Deadlines are for
broken set-ups, never outcomes.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest

from tests.integration.conftest import HARNESS, REPO, engine_processes, run_harness
from tests.integration.sglang_real import require_sglang, sglang_matrix

pytestmark = [pytest.mark.timeout(1200)]

QUALITY = ("quality: {tasks: [eh_capitals, eh_copy], tokenizer: none, limit: 6, concurrency: 2}\n"
           "probes: {enabled: false}\ndistribution: {enabled: false}\n"
           "throughput: {scenarios: [{name: s, concurrency: 1, requests: 2, input_len: 16, output_len: 16, "
           "warmup_requests: 0}]}\n")


def test_sigint_mid_quality_then_resume_finishes_the_cell_without_asking_again(tmp_path):
    require_sglang()
    matrix = sglang_matrix(tmp_path, {"ref": "{}"}, extra=QUALITY)
    out = tmp_path / "out"
    harness = subprocess.Popen([*HARNESS, "run", "--matrix", str(matrix), "--out", str(out)], cwd=REPO,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    quality = out / "cells" / "cell-ref" / "quality"
    second = quality / "eh_copy" / "spec.json"  # the first task has finished and written its samples
    deadline = time.monotonic() + 900
    while not second.exists() and harness.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert second.exists(), harness.communicate(timeout=60)
    harness.send_signal(signal.SIGINT)
    _, err = harness.communicate(timeout=300)
    assert harness.returncode == 130, err
    assert engine_processes() == []  # the launcher, its scheduler and detokenizer are all gone
    first = quality / "eh_capitals" / "finished.json"
    assert first.exists()
    asked = (quality / "eh_capitals" / "requests.jsonl").read_text()
    results = json.loads((out / "results.json").read_text())
    assert results["interrupted"] is True and results["complete"] is False

    proc = run_harness("run", "--matrix", str(matrix), "--out", str(out), "--resume", timeout=900)
    assert proc.returncode in (0, 3), proc.stdout + proc.stderr  # 3: a verdict left inconclusive
    assert engine_processes() == []
    results = json.loads((out / "results.json").read_text())
    cell = results["cells"]["cell-ref"]
    assert results["complete"] is True and cell["status"] == "ok", cell["reason"]
    scores = {t["task"]: t for t in cell["quality"]}
    assert set(scores) == {"eh_capitals", "eh_copy"} and all(t["value"] is not None for t in scores.values())
    # the task finished before the interrupt was taken from its folder, not asked again
    assert (quality / "eh_capitals" / "requests.jsonl").read_text() == asked
    # and so was the throughput repeat measured before it (cells/<id>/throughput/, issue 43)
    [scenario] = cell["throughput"]
    assert [f["resumed"] for f in scenario["repeat_figures"]] == [True] and scenario["completed"] == 2
    assert not (quality / "eh_capitals" / "lm_eval.attempt2.log").exists()
    assert "server.log" in cell["log"] and (out / cell["log"]).exists()
