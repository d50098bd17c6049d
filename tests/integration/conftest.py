"""Shared set-up for tests against the real embedded engine (vLLM CPU build serving SmolLM2-135M-Instruct).

These tests never skip: if the engine or the model is missing they fail and say how to set them up.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from evalharness.serving.processes import MARKER_ENV

REPO = Path(__file__).resolve().parents[2]
ENGINE_PYTHON = REPO / ".engine" / "venv" / "bin" / "python"
MODEL = REPO / ".engine" / "models" / "SmolLM2-135M-Instruct"
HARNESS = [sys.executable, "-m", "evalharness"]


@pytest.fixture(scope="session")
def engine() -> dict[str, str]:
    missing = [str(p) for p in (ENGINE_PYTHON, MODEL / "config.json") if not p.exists()]
    if missing:
        pytest.fail(f"the embedded engine is not set up ({', '.join(missing)} missing): run scripts/setup.sh")
    return {"python": str(ENGINE_PYTHON), "model": str(MODEL)}


def matrix_yaml(engine: dict[str, str], cells: dict[str, str], startup_s: float = 300, extra: str = "") -> str:
    """A matrix on the embedded engine with one axis `cell`, whose values are given as YAML flow mappings."""
    values = "\n".join(f"    {name}: {body}" for name, body in cells.items())
    return f"""\
name: integration
engine: vllm
model: {engine['model']}
served_model_name: smollm2
command: [{engine['python']}, -m, vllm.entrypoints.openai.api_server]
args: {{--max-model-len: 1024, --enforce-eager: true, --enable-tokenizer-info-endpoint: true}}
env: {{VLLM_CPU_KVCACHE_SPACE: 1, HF_HUB_OFFLINE: 1}}
axes:
  cell:
{values}
timeouts: {{startup_s: {startup_s}, teardown_grace_s: 20}}
{extra}"""


def engine_processes() -> list[psutil.Process]:
    """Every live engine process on this machine: launched by an evalharness server (the marker variable; vLLM's
    renamed workers can hide it, see server.py), renamed VLLM::*, or serving the test model."""
    found = []
    for proc in psutil.process_iter(["pid", "name"]):
        try:
            if proc.status() == psutil.STATUS_ZOMBIE:
                continue
            if (proc.info["name"] or "").startswith("VLLM::") or MARKER_ENV in proc.environ() \
                    or str(MODEL) in " ".join(proc.cmdline()):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def run_harness(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*HARNESS, *args], capture_output=True, text=True, timeout=timeout, cwd=REPO,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})
