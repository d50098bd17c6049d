"""The real SGLang 0.5.23 of the integration tests: where set-up put it, how a test matrix launches it, and the reason
it is missing. Set-up (scripts/setup.sh) builds .engine/sglang/venv once; a machine where it cannot be installed
leaves its reason in .engine/sglang/unavailable, and every real-SGLang test then reports itself skipped with that
reason (never silently). A missing environment without that file is a set-up that was not run: the tests fail.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.conftest import MODEL, REPO, SERVED_NAME

SGLANG_ROOT = REPO / ".engine" / "sglang"
SGLANG_BIN = SGLANG_ROOT / "venv" / "bin" / "sglang"
SGLANG_PYTHON = SGLANG_ROOT / "venv" / "bin" / "python"
UNAVAILABLE = SGLANG_ROOT / "unavailable"
# what every real-SGLang cell shares: the CPU engine (without SGLANG_USE_CPU_ENGINE, --device cpu crashes the
# scheduler on "No module named 'vllm'"), a small KV pool, and the counters (--enable-metrics is added by the harness)
SGLANG_ARGS = {"--device": "cpu", "--max-total-tokens": 8192, "--dtype": "float32"}
SGLANG_ENV = {"SGLANG_USE_CPU_ENGINE": "1", "HF_HUB_OFFLINE": "1"}


def require_sglang() -> None:
    """Skip with set-up's reason where SGLang cannot be installed; fail where set-up was simply not run."""
    if UNAVAILABLE.exists():
        pytest.skip(f"real SGLang unavailable on this machine: {UNAVAILABLE.read_text().strip()}")
    if not SGLANG_BIN.exists() or not (MODEL / "config.json").exists():
        pytest.fail(f"the SGLang engine is not set up ({SGLANG_BIN} or the model missing): run scripts/setup.sh")


def sglang_matrix(folder: Path, cells: dict[str, str], extra: str = "") -> Path:
    """A matrix file on the real SGLang with one axis `cell` (values as YAML flow mappings)."""
    values = "\n".join(f"    {name}: {body}" for name, body in cells.items())
    path = folder / "matrix.yaml"
    path.write_text(f"""\
name: sglang-integration
engine: sglang
model: {MODEL}
served_model_name: {SERVED_NAME}
command: {json.dumps([str(SGLANG_BIN), "serve"])}
args: {json.dumps(SGLANG_ARGS)}
env: {json.dumps(SGLANG_ENV)}
axes:
  cell:
{values}
timeouts: {{startup_s: 600, teardown_grace_s: 30}}
{extra}""")
    return path
