"""The real engine is killed in the middle of the quality phase: that cell is crashed at phase quality with the
finished task kept, the next cell still runs, and no engine process is left."""

import json
import subprocess
import time

import psutil
import pytest

from tests.integration.conftest import HARNESS, engine_processes, matrix_yaml

pytestmark = [pytest.mark.engine, pytest.mark.timeout(2400)]  # a safety limit, about 3x a 2-core machine's time


def test_engine_killed_during_quality(engine, tmp_path):
    matrix = tmp_path / "m.yaml"
    matrix.write_text(matrix_yaml(engine, {"victim": "{args: {--dtype: float32}}", "next": "{args: {--dtype: float32}}"},
                                  extra="quality: {tasks: [eh_copy, eh_choice], limit: 20, subset: first, retries: 1}\n"
                                  # neither is its subject (and no reference served again for the numerics)
                                  "probes: {enabled: false}\ndistribution: {enabled: false}\n"))
    out = tmp_path / "out"
    # a relative --out from another folder: the lm-eval worker changes folders, results must not follow it
    harness = subprocess.Popen([*HARNESS, "run", "--matrix", "m.yaml", "--out", "out"], cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # the second task of the first cell has started: the first one is finished and written
    second_task = out / "cells" / "cell-victim" / "quality" / "eh_choice" / "spec.json"
    deadline = time.monotonic() + 1200  # a deadline, not a measurement
    while not second_task.exists() and time.monotonic() < deadline and harness.poll() is None:
        time.sleep(0.2)
    assert second_task.exists(), "the quality phase never reached its second task"
    launchers = [p for p in psutil.Process(harness.pid).children()
                 if "vllm.entrypoints.openai.api_server" in " ".join(p.cmdline())]
    assert len(launchers) == 1
    launchers[0].kill()  # the engine dies mid-task, as on a GPU that faults
    _, err = harness.communicate(timeout=1500)
    assert harness.returncode == 0, err
    assert engine_processes() == []
    cells = json.loads((out / "results.json").read_text())["cells"]
    victim = cells["cell-victim"]
    assert victim["status"] == "crashed" and victim["phase"] == "quality", victim["reason"]
    assert "died during quality" in victim["reason"]
    kept = {t["task"]: t for t in victim["quality"]}
    assert kept["eh_copy"]["value"] is not None and kept["eh_copy"]["n"] == 20
    assert (out / kept["eh_copy"]["samples"]).exists()
    survivor = cells["cell-next"]
    assert survivor["status"] == "ok" and [t["task"] for t in survivor["quality"]] == ["eh_copy", "eh_choice"]
    assert all(t["value"] is not None for t in survivor["quality"])
