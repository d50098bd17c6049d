"""Results records (atomic, masked, versioned) and the Markdown report (escaped, complete)."""

import json
import os

import pytest

from evalharness.records.io import ResultsError, atomic_write_text, load_run, save_run
from evalharness.records.masking import mask_argv, mask_env
from evalharness.records.measures import CrashReason, LogWarning
from evalharness.records.run import CellResult, RunMeta, RunResult
from evalharness.render.markdown import code_block, md_text
from evalharness.render.report import render_markdown


def _cell(cid, status="ok", **kw):
    base = dict(id=cid, axes={"a": cid}, settings_hash="h", args={}, env={}, argv=["x"], status=status,
                phase="done" if status == "ok" else "startup", started_at="t", finished_at="t", duration_s=1.0)
    return CellResult(**{**base, **kw})


def _run(cells, order=None):
    meta = RunMeta(harness_version="0.1.0", engine="vllm", matrix_name="m", matrix_path="m.yaml", started_at="t",
                   machine={"hostname": "h", "cpus": 2, "memory_gib": 24})
    return RunResult(meta=meta, reference=cells[0].id, cell_order=order or [c.id for c in cells],
                     cells={c.id: c for c in cells})


@pytest.mark.parametrize("text,bad", [
    ("a | b", "a | b"), ("`code`", "`"), ("<script>alert(1)</script>", "<script>"), ("@everyone look", "@everyone"),
    ("line1\nline2", "\n"), ("[link](http://x)", "[link]"), ("**bold**", "**"),
])
def test_md_text_neutralises(text, bad):
    assert bad not in md_text(text)


def test_code_block_cannot_be_closed_from_inside():
    block = code_block("```\n# heading\n````\n@someone")
    fence = block.split("text", 1)[0]
    assert len(fence) == 5 and block.endswith("\n" + fence) and "@someone" not in block


def test_report_lists_every_cell_with_reasons_and_differences():
    ref = _cell("ref", resolved={"args.dtype": "float32", "backend": "x"}, startup_s=40.0, args={"--dtype": "float32"})
    fast = _cell("fast", resolved={"args.dtype": "bfloat16", "backend": "y"}, startup_s=39.0, args={"--dtype": "bfloat16"},
                 warnings=[LogWarning(key="max_running_requests_reset", message="Max running requests is reset to 48",
                                      values={"max_running_requests": "48"})])
    crash = _cell("boom", status="crashed", reason="unsupported_kernel: RuntimeError: x | y",
                  crash=CrashReason(kind="unsupported_kernel", line="RuntimeError", excerpt="Traceback\n```\nRuntimeError"))
    text = render_markdown(_run([ref, fast, crash], ["ref", "fast", "boom", "later"]))
    assert "| `ref` (reference) | ok | done | 40.0 |" in text
    assert "max\\_running\\_requests\\_reset (max\\_running\\_requests=48)" in text
    assert "| `boom` | **crashed** | startup |" in text and "x \\| y" in text
    assert "| `later` | not run |" in text
    assert "| backend | x | y | **not asked** |" in text and "| args.dtype | float32 | bfloat16 | asked |" in text
    assert "````text\nTraceback" in text  # the excerpt's own fence cannot close ours


def test_leftover_processes_of_a_crashed_cell_are_in_the_report():
    """Issue 13.5: a crash keeps its excerpt, and what teardown left behind is said beside it."""
    from evalharness.records.run import TeardownRecord

    crash = _cell("boom", status="crashed", reason="out_of_memory: OOM",
                  crash=CrashReason(kind="out_of_memory", line="OOM", excerpt="OOM"),
                  teardown=TeardownRecord(seconds=1.0, leftover=[4242]))
    text = render_markdown(_run([_cell("ref"), crash]))
    assert "### `boom`: crashed at startup" in text
    assert "**Engine processes left behind after teardown**: [4242]" in text


def test_atomic_write_leaves_no_temporary_files(tmp_path):
    atomic_write_text(tmp_path / "r.json", "{}")
    atomic_write_text(tmp_path / "r.json", '{"a": 1}')
    assert os.listdir(tmp_path) == ["r.json"] and json.loads((tmp_path / "r.json").read_text()) == {"a": 1}


def test_run_round_trips_and_bad_files_are_refused(tmp_path):
    run = _run([_cell("a")])
    save_run(run, tmp_path)
    assert load_run(tmp_path) == run
    (tmp_path / "results.json").write_text('{"schema_version": 99}')
    with pytest.raises(ResultsError, match="schema_version 99"):
        load_run(tmp_path)
    (tmp_path / "results.json").write_text('{"trunc')
    with pytest.raises(ResultsError, match="not readable JSON"):
        load_run(tmp_path)
    with pytest.raises(ResultsError, match="no results here"):
        load_run(tmp_path / "nope")


def test_secrets_are_masked():
    assert mask_env({"HF_TOKEN": "hf_x", "OPENAI_API_KEY": "k", "CUDA_VISIBLE_DEVICES": "0"}) == {
        "HF_TOKEN": "***", "OPENAI_API_KEY": "***", "CUDA_VISIBLE_DEVICES": "0"}
    assert mask_argv(["serve", "--api-key", "s3cret", "--hf-token=abc", "--port", "1"]) == [
        "serve", "--api-key", "***", "--hf-token=***", "--port", "1"]
    # plural "tokens" is a count, not a secret
    assert mask_argv(["--speculative-num-draft-tokens", "2", "--max-new-tokens", "8"]) == [
        "--speculative-num-draft-tokens", "2", "--max-new-tokens", "8"]
    assert mask_env({"DB_PASSWORD": "x", "SGLANG_ENABLE_JIT_DEEPGEMM": "1"}) == {"DB_PASSWORD": "***",
                                                                             "SGLANG_ENABLE_JIT_DEEPGEMM": "1"}
