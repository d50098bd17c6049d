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


EPYC = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu sse2 avx avx2 fma f16c\n"
XEON = ("processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n"
        "flags\t\t: avx2 fma f16c avx512f avx512_bf16 avx512_fp16 avx512_vnni amx_tile amx_bf16 amx_int8\n")
GRACE = "processor\t: 0\nBogoMIPS\t: 2000.00\nFeatures\t: fp asimd sve sve2 bf16 i8mm\nCPU implementer\t: 0x41\n"


@pytest.mark.parametrize("cpuinfo,expected", [
    (EPYC, {"cpu_model": "AMD EPYC 7B13", "cpu_flags": ["avx2", "fma", "f16c"]}),  # no native bf16
    (XEON, {"cpu_model": "Intel(R) Xeon(R) Platinum 8480+", "cpu_flags": [
        "avx2", "fma", "f16c", "avx512f", "avx512_bf16", "avx512_fp16", "avx512_vnni", "amx_tile", "amx_bf16",
        "amx_int8"]}),
    (GRACE, {"cpu_model": None, "cpu_flags": ["asimd", "sve", "sve2", "bf16", "i8mm"]}),
    ("", {"cpu_model": None, "cpu_flags": []}),
])
def test_the_processor_model_and_its_numeric_flags_are_read_from_cpuinfo(cpuinfo, expected):
    """Issue 13.8: which processor, and whether it computes bf16 natively."""
    from evalharness.records.provenance import cpu_info

    assert cpu_info(cpuinfo) == expected


def test_gpu_model_and_driver_are_read_from_nvidia_smi():
    from evalharness.records.provenance import gpu_info, machine_kind

    gpus = gpu_info("NVIDIA H200, 570.124.06, 143771\nNVIDIA H200, 570.124.06, 143771\n")
    assert gpus[0] == {"name": "NVIDIA H200", "driver": "570.124.06", "memory_mib": 143771}
    assert machine_kind({"cpu_model": "x", "gpus": gpus}) == "2 x NVIDIA H200 (driver 570.124.06)"


def test_the_report_says_which_processor_the_run_was_measured_on():
    """Issue 13.8: report.md and summary.md name the processor (or GPUs), not only a count of CPUs; old runs say
    unknown."""
    from evalharness.records.provenance import cpu_info, machine_info
    from evalharness.render.report import summary_markdown

    run = _run([_cell("ref")])
    run.meta.machine.update(cpu_info(EPYC))
    kind = "AMD EPYC 7B13 (avx2 fma f16c)"
    assert f"measured on {kind}." in render_markdown(run) and f"measured on {kind}" in summary_markdown(run)
    assert "measured on unknown." in render_markdown(_run([_cell("ref")]))  # a run from before it was recorded
    assert machine_info()["cpu_model"]  # this machine names its processor


def test_the_engine_version_comes_from_sglangs_server_facts_when_its_settings_lack_it():
    """SGLang 0.5.23's /server_info version is a measured value, kept in the server facts and not in the resolved
    settings: the run's header, the baseline and compare name it from there (vLLM's stays in the settings)."""
    from evalharness.records.run import CellResult, RunMeta, RunResult

    def cell(cid, status="ok", resolved=None, server=None):
        return CellResult(id=cid, axes={}, settings_hash="h", args={}, env={}, argv=[], status=status, phase="done",
                          resolved=resolved or {}, server=server or {}, started_at="t", finished_at="t", duration_s=1)

    meta = RunMeta(harness_version="0", engine="sglang", matrix_name="m", matrix_path="m.yaml", started_at="t")
    run = RunResult(meta=meta, reference="a", cell_order=["a", "b"], cells={
        "a": cell("a", "crashed"), "b": cell("b", server={"versions": {"sglang": "0.5.23", "torch": "2.13.0"}})})
    assert run.cells["b"].engine_version("sglang") == "0.5.23" and run.cells["a"].engine_version("sglang") is None
    assert run.engine_version() == "0.5.23"  # a run recorded before: its meta has none, an ok cell reported it
    assert cell("v", resolved={"version": "0.32.0"}).engine_version("vllm") == "0.32.0"
    run.meta.engine_version = "0.5.22"
    assert run.engine_version() == "0.5.22"  # what the run recorded stands
