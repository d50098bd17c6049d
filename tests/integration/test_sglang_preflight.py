"""`evalharness validate` against the real SGLang parser (the real SGLang 0.5.23 environment that scripts/setup.sh
builds, .engine/sglang/venv; skipped with set-up's reason where it cannot install): the story's 24 cells pass; flags and variables the installed version lacks are
rejected with the flag, the cell and the version named."""

from pathlib import Path

import pytest

from tests.integration.conftest import REPO, run_harness
from tests.integration.sglang_real import SGLANG_PYTHON, require_sglang

pytestmark = [pytest.mark.timeout(600)]

SM120 = REPO / "matrices" / "sm120.yaml"


@pytest.fixture(scope="module")
def sglang_python() -> str:
    require_sglang()
    return str(SGLANG_PYTHON)


def validate(path: Path, python: str | None, *extra: str):
    args = ["validate", "--matrix", str(path)] + (["--engine-python", python] if python else []) + list(extra)
    return run_harness(*args, timeout=600)


def test_the_story_matrix_passes_the_real_parser(sglang_python):
    proc = validate(SM120, sglang_python)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "24 cells" in proc.stdout and "SGLang 0.5.23" in proc.stdout and "24/24 cells accepted" in proc.stdout


# three changes to the story's matrix, each something the installed version lacks, checked in one run of its parser
# (one import of SGLang, about 25 s here, instead of one per change)
LACKING = [
    # the seed's flag, renamed since: 0.5.23 no longer knows it (the nextn-on cells)
    ("--mamba-radix-cache-strategy: extra_buffer", "--mamba-scheduler-strategy: extra_buffer",
     "unrecognized arguments: --mamba-scheduler-strategy extra_buffer"),
    # a misspelt backend (the flashinfer_trtllm cells)
    ("args: {--moe-runner-backend: flashinfer_trtllm}", "args: {--moe-runner-backend: flashinfer_trtlm}",
     "argument --moe-runner-backend: invalid choice: 'flashinfer_trtlm'"),
    # a variable of a later version (the deepgemm-off cells)
    ("off: {label: no-dg, env: {SGLANG_ENABLE_JIT_DEEPGEMM: \"0\"}}",
     "off: {label: no-dg, env: {SGLANG_ENABLE_JIT_DEEPGEMM: \"0\", SGLANG_ENABLE_SPEC_V2: \"1\"}}",
     "environment variables that sglang 0.5.23 does not define: SGLANG_ENABLE_SPEC_V2"),
]


def test_what_the_installed_version_lacks_is_rejected(sglang_python, tmp_path):
    text = SM120.read_text()
    for old, new, _ in LACKING:
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / "m.yaml"
    path.write_text(text)
    proc = validate(path, sglang_python)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    rejected = [line for line in proc.stderr.splitlines() if "REJECTED moe-" in line]
    for _, _, expected in LACKING:  # each with the cell and the version named
        assert any(expected in line and ("(sglang 0.5.23)" in line or "sglang 0.5.23 does not" in line)
                   for line in rejected), (expected, proc.stderr[-3000:])
    # only the cells none of the three touch pass: moe not trtllm (2) x fp4 (2) x deepgemm on x nextn off
    assert "4/24 cells accepted" in proc.stdout


def test_without_sglang_it_fails_unless_told_not_to_check(tmp_path, monkeypatch):
    monkeypatch.delenv("EVALHARNESS_SGLANG_PYTHON", raising=False)
    path = tmp_path / "m.yaml"
    path.write_text(SM120.read_text().replace("command: [sglang, serve]", "command: [/nonexistent/sglang, serve]"))
    proc = validate(path, None)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "SGLang: could not check the cells" in proc.stderr and "--no-engine-check" in proc.stderr
    proc = validate(path, None, "--no-engine-check")
    assert proc.returncode == 0 and "SGLang: not checked (--no-engine-check)" in proc.stdout


def test_direct_reads_and_the_sgl_prefix_are_known(sglang_python, tmp_path):
    """SGLANG_HEALTH_CHECK_TIMEOUT is read with os.getenv (sglang/srt/entrypoints/http_server.py), not through Envs;
    SGL_ENABLE_JIT_DEEPGEMM is rewritten to SGLANG_ENABLE_JIT_DEEPGEMM (sglang/srt/environ.py); a misspelt one is not."""
    old = 'off: {label: no-dg, env: {SGLANG_ENABLE_JIT_DEEPGEMM: "0"}}'
    assert old in SM120.read_text()
    text = SM120.read_text().replace(old, 'off: {label: no-dg, env: {SGL_ENABLE_JIT_DEEPGEMM: "0", '
                                          'SGLANG_HEALTH_CHECK_TIMEOUT: "60"}}')
    path = tmp_path / "m.yaml"
    path.write_text(text)
    proc = validate(path, sglang_python)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SGL_ENABLE_JIT_DEEPGEMM is rewritten to SGLANG_ENABLE_JIT_DEEPGEMM" in proc.stdout
    path.write_text(text.replace("SGLANG_HEALTH_CHECK_TIMEOUT", "SGLANG_HEALTH_CHECK_TIMEOUTT"))
    proc = validate(path, sglang_python)
    assert proc.returncode == 2 and "SGLANG_HEALTH_CHECK_TIMEOUTT" in proc.stderr
