"""Interrupting the harness while the real engine starts, and a startup timeout: no engine process may be left."""

import json
import os
import signal
import subprocess
import time

import psutil
import pytest

from tests.integration.conftest import HARNESS, REPO, engine_processes, matrix_yaml, run_harness

pytestmark = [pytest.mark.engine, pytest.mark.timeout(600)]


@pytest.mark.parametrize("sig,status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupt_while_the_server_starts(engine, tmp_path, sig, status):
    matrix = tmp_path / "m.yaml"
    matrix.write_text(matrix_yaml(engine, {"a": "{args: {--dtype: bfloat16}}", "b": "{args: {--dtype: float32}}"}))
    out = tmp_path / "out"
    harness = subprocess.Popen([*HARNESS, "run", "--matrix", str(matrix), "--out", str(out)], cwd=REPO,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # wait until the engine is well into its startup: its EngineCore child exists
    deadline = time.monotonic() + 120
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
    _, err = harness.communicate(timeout=120)
    assert harness.returncode == status, err
    assert engine_processes() == []
    results = json.loads((out / "results.json").read_text())
    assert results["interrupted"] is True and results["complete"] is False and results["cells"] == {}
    assert "interrupted" in err
    report = (out / "report.md").read_text()
    assert "Run interrupted" in report and "| `cell-a` (reference) | not run |" in report
    assert "| `cell-b` | not run |" in report


def test_startup_timeout_kills_and_records(engine, tmp_path):
    matrix = tmp_path / "m.yaml"
    matrix.write_text(matrix_yaml(engine, {"slow": "{}"}, startup_s=4))
    out = tmp_path / "out"
    proc = run_harness("run", "--matrix", str(matrix), "--out", str(out), timeout=300)
    assert proc.returncode == 0, proc.stderr
    cell = json.loads((out / "results.json").read_text())["cells"]["cell-slow"]
    assert cell["status"] == "timeout" and cell["phase"] == "startup"
    assert "not ready after 4s" in cell["reason"]
    assert cell["teardown"]["leftover"] == []
    assert engine_processes() == []
