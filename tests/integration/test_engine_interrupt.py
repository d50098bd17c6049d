"""Interrupting the harness while the real engine starts, and a startup timeout: no engine process may be left.

The startup timeout does not race the engine's real start: the fault proxy (tests/faults/fault_engine.py) in front of
the real engine answers /health with 503 for ever, so the cell can never be ready whatever the machine's speed, and the
timeout fires while the real engine is still loading (its processes must all be killed)."""

import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from tests.integration.conftest import (ENGINE_MODULE, FAULT_ENGINE, FULL_TREE_ENV, HARNESS, REPO, engine_processes,
                                        matrix_yaml, run_harness)

pytestmark = [pytest.mark.engine, pytest.mark.timeout(1200)]


@pytest.mark.parametrize("sig,status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupt_while_the_server_starts(engine, tmp_path, sig, status):
    matrix = tmp_path / "m.yaml"
    matrix.write_text(matrix_yaml(engine, {"a": "{args: {--dtype: bfloat16}}", "b": "{args: {--dtype: float32}}"},
                                  env=FULL_TREE_ENV))  # vLLM's own three-process tree: its teardown is under test
    out = tmp_path / "out"
    harness = subprocess.Popen([*HARNESS, "run", "--matrix", str(matrix), "--out", str(out)], cwd=REPO,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # wait until the engine is well into its startup: its EngineCore child exists (a deadline, not a measurement)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        try:
            names = [p.name() for p in psutil.Process(harness.pid).children(recursive=True)]
        except psutil.NoSuchProcess:
            names = []
        if any("EngineCor" in n for n in names):
            break
        time.sleep(0.2)
    else:
        harness.kill()
        pytest.fail("the engine never got to its EngineCore process")
    assert harness.poll() is None
    os.kill(harness.pid, sig)
    _, err = harness.communicate(timeout=300)
    assert harness.returncode == status, err
    assert engine_processes() == []
    results = json.loads((out / "results.json").read_text())
    assert results["interrupted"] is True and results["complete"] is False and results["cells"] == {}
    assert "interrupted" in err
    report = (out / "report.md").read_text()
    assert "Run interrupted" in report and "| `cell-a` (reference) | not run |" in report
    assert "| `cell-b` | not run |" in report


def test_startup_timeout_kills_and_records(engine, tmp_path):
    never_ready = json.dumps({"rules": [{"match": {"path": "/health"}, "action": "status", "code": 503}]})
    matrix = tmp_path / "m.yaml"
    matrix.write_text(matrix_yaml(engine, {"slow": "{env: {EH_FAULTS: '" + never_ready + "'}}"}, startup_s=15,
                                  command=[sys.executable, str(FAULT_ENGINE), "--", engine["python"], *ENGINE_MODULE]))
    out = tmp_path / "out"
    proc = run_harness("run", "--matrix", str(matrix), "--out", str(out), timeout=600)
    assert proc.returncode == 0, proc.stderr
    cell = json.loads((out / "results.json").read_text())["cells"]["cell-slow"]
    assert cell["status"] == "timeout" and cell["phase"] == "startup"
    assert "not ready after 15s" in cell["reason"]
    assert "[fault] status on GET /health" in (out / cell["log"]).read_text()  # the health check was polled and refused
    assert cell["teardown"]["leftover"] == []
    assert engine_processes() == []
