"""SGLang's log knowledge on its real texts: 0.5.23's (assembled from the pinned wheel's message strings, see
tests/data/README.md) and the story's older build (copied from ../shared/seed). Each rule names its source."""

from pathlib import Path

import pytest

from evalharness.serving.engines.sglang_logs import LOG_RULES, decode_summary
from evalharness.serving.logscan import LogRules, classify_crash, extract_warnings, strip_prefix

DATA = Path(__file__).resolve().parents[2] / "data"

CRASHES = [
    # (log, kind, text the chosen line must contain)
    ((DATA / "sglang-0.5.23-flashinfer-sm120-crash.log").read_text(), "unsupported_kernel",
     "contains no kernels runnable on sm120"),
    # FlashInfer 0.7.2 on an offline box: the cubin download fails before any arch check (flashinfer/jit/fused_moe.py)
    ("[2026-11-30 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
     '  File "/usr/lib/python3/dist-packages/flashinfer/jit/fused_moe.py", line 256, in '
     "gen_trtllm_gen_fused_moe_sm100_module\n    assert checksum, f\"Failed to get checksums.txt from {checksum_path}\"\n"
     "AssertionError: Failed to get checksums.txt from 2d7e4b1/batched_gemm-074aec4-cc00b23/checksums.txt\n",
     "unsupported_kernel", "AssertionError: Failed to get checksums.txt"),
    ((DATA / "sglang-0.5.23-scheduler-oom-killed.log").read_text(), "out_of_memory",
     "Rank 3 scheduler died during initialization (exit code: -9)"),
    ((DATA / "sglang-0.5.23-port-crash.log").read_text(), "port_in_use", "is not available in 30 seconds"),
    ("[2026-11-30 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
     "RuntimeError: Artifact not found locally: batched_gemm-8a1b/Bmm_E2m1_sm100f.cubin (looked at /c/x.cubin). "
     "FLASHINFER_NO_DOWNLOAD is set — refusing to download. This means flashinfer-cubin is missing this file.\n",
     "unsupported_kernel", "Artifact not found locally"),
    ("flashinfer.utils.BackendSupportedError: mm_fp4 does not support compute capability 120\n", "unsupported_kernel",
     "does not support compute capability 120"),
    ("[2026-11-30 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
     "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: "
     "mem_fraction_static=0.85\n", "out_of_memory", "Not enough memory"),
    # exit code 1 is not the OOM killer: the wrapper never wins over the scheduler's own error above it
    ("[2026-11-30 10:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
     "KeyError: 'rope_theta'\n"
     "RuntimeError: Rank 0 scheduler died during initialization (exit code: 1). If exit code is -9 (SIGKILL), a common "
     "cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check.\n", "other", "KeyError: 'rope_theta'"),
]


@pytest.mark.parametrize("log,kind,shown", CRASHES, ids=[f"{c[1]}-{i}" for i, c in enumerate(CRASHES)])
def test_sglang_0_5_23_crash_classes(log, kind, shown):
    reason = classify_crash(log, LOG_RULES)
    assert reason.kind == kind
    assert shown in reason.line


def test_a_warning_that_mentions_memory_never_outranks_the_fatal_error_after_it():
    """0.5.23 has no level tag: the DeepGEMM warm-up warning ("... to avoid out of memory") looks like any line. The
    process died of a broken install; the old first-rule-wins order called it out_of_memory."""
    log = ("[2026-11-30 10:01:52 TP0] Available memory 3.5GB is less than required memory 6.2GB for warmup, reducing "
           "max_m to 4096 to avoid out of memory\n"
           "[2026-11-30 10:02:10 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
           '  File "/x/sgl_kernel/__init__.py", line 5, in <module>\n'
           "ImportError: /x/sgl_kernel/common_ops.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEi\n")
    reason = classify_crash(log, LOG_RULES)
    assert reason.kind == "import_error" and "undefined symbol" in reason.line
    # ... and on its own the warning is still a warning with its values, not a crash class
    [warning] = extract_warnings(log, LOG_RULES)
    assert warning.key == "deepgemm_warmup_reduced" and warning.values["max_m"] == "4096"


def test_a_warning_never_decides_the_crash_class():
    """The fatal line matches no rule: the class is "other" with that line, never the out-of-memory of the DeepGEMM
    warm-up warning before it (sglang/srt/layers/deep_gemm_wrapper/compile_utils.py)."""
    log = ("[2026-11-30 10:01:52 TP0] Available memory 3.5GB is less than required memory 6.2GB for warmup, reducing "
           "max_m to 4096 to avoid out of memory\n"
           "[2026-11-30 10:02:10 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
           '  File "/x/sglang/srt/managers/scheduler.py", line 6401, in run_scheduler_process\n'
           "KeyError: 'rope_theta'\n")
    reason = classify_crash(log, LOG_RULES)
    assert reason.kind == "other" and reason.line == "KeyError: 'rope_theta'"


def test_the_last_fatal_error_wins_over_an_early_one_of_the_same_rank():
    log = ("[t] ValueError: nccl_port at 30001 is not available in 30 seconds.\n"  # retried, then ...
           "[t] RuntimeError: Rank 0 scheduler died during initialization (exit code: -9). If exit code is -9 (SIGKILL), "
           "a common cause is the OS OOM killer.\n")
    assert classify_crash(log, LOG_RULES).kind == "out_of_memory"  # rule order: out_of_memory before port_in_use
    assert "Rank 0" in classify_crash(log, LOG_RULES).line


def test_the_story_lines_warn_with_their_values():
    text = (DATA / "sglang-story-nextn-startup.log").read_text()
    warnings = {w.key: w for w in extract_warnings(text, LOG_RULES)}
    assert warnings["deepgemm_scale_fmt"].values == {"expected_fmt": "ue8m0"}
    assert warnings["max_running_requests_reset"].values == {"max_running_requests": "48"}  # the story truncated it
    assert "deprecated_entrypoint" in warnings


def test_0_5_23_warnings_without_a_level_tag():
    text = ("[2026-11-30 11:00:05] Max running requests is reset to 48 for speculative decoding. You can override "
            "this by explicitly setting --max-running-requests.\n"
            "[2026-11-30 11:20:00 TP0] Cache not flushed because there are pending requests. #queue-req: 3, "
            "#running-req: 8\n"
            "[2026-11-30 11:30:00] Schedulers still alive 15s after ShutdownReq, killing them before they released: "
            "[4242]\n"
            "/e/sglang/srt/environ.py:2302: UserWarning: Environment variable SGL_ENABLE_JIT_DEEPGEMM is deprecated, "
            "please use SGLANG_ENABLE_JIT_DEEPGEMM\n")
    warnings = {w.key: w for w in extract_warnings(text, LOG_RULES)}
    assert warnings["max_running_requests_reset"].values["max_running_requests"] == "48"
    assert warnings["cache_not_flushed"].values == {"queue": "3", "running": "8"}
    assert warnings["schedulers_killed_before_release"].values == {"seconds": "15"}
    assert warnings["env_deprecated"].values == {"variable": "SGL_ENABLE_JIT_DEEPGEMM",
                                                 "replacement": "SGLANG_ENABLE_JIT_DEEPGEMM"}
    assert "other" not in warnings


def test_every_rule_names_its_source():
    for rule in (*LOG_RULES.crashes, *LOG_RULES.warnings):
        assert rule.source.startswith(("sglang/", "flashinfer/", "story")), rule
    for rule in LOG_RULES.warnings:
        assert rule.meaning, rule.key


def test_strip_prefix_on_0_5_23_lines():
    assert strip_prefix("[2026-11-30 10:00:00 TP0] Load weight begin.") == "Load weight begin."
    assert strip_prefix("[2026-11-30 10:00:00.123 DP1 TP3] Decode batch, x") == "Decode batch, x"
    assert strip_prefix("[2026-11-30 10:00:00] ERROR:    Exception in ASGI application") == "Exception in ASGI application"


DECODE = """\
[2026-11-30 11:10:00 TP0] Decode batch, #running-req: 8, #token: 9000, token usage: 0.02, accept len: 1.80, accept rate: 0.80, cuda graph: True, gen throughput (token/s): 400.00, #queue-req: 0
[2026-11-30 11:10:01 TP0] Decode batch, #running-req: 8, #token: 9300, token usage: 0.02, accept len: 2.20, accept rate: 0.95, cuda graph: True, gen throughput (token/s): 440.00, #queue-req: 2
[2026-11-30 11:10:02 TP0] Decode batch, #running-req: 4, #token: 4000, token usage: 0.01, cuda graph: False, gen throughput (token/s): 100.00, #queue-req: 0
"""


def test_decode_batch_lines_summarised():
    assert decode_summary(DECODE) == {
        "server_decode_lines": 3, "server_cuda_graph": "mixed", "server_gen_tok_s_median": 400.0,
        "server_gen_tok_s_max": 440.0, "server_queue_max": 2, "server_running_max": 8, "server_accept_len_mean": 2.0}
    assert decode_summary("no decode lines\n") == {}


def test_generic_rules_still_apply_to_other_engines():
    assert classify_crash("ImportError: x\n", LogRules()).kind == "import_error"


CAPTURED_CRASH = DATA / "sglang-0.5.23-cpu-flashinfer-missing.log"
CAPTURED_SERVE = DATA / "sglang-0.5.23-cpu-serve.log"


def test_a_captured_real_crash_is_classified_from_its_fatal_line():
    """Captured from the real SGLang 0.5.23 on this project's CPU (tests/integration/test_sglang_real.py):
    `--attention-backend flashinfer` in an environment without flashinfer_python."""
    reason = classify_crash(CAPTURED_CRASH.read_text(), LOG_RULES)
    assert reason.kind == "unsupported_kernel"
    assert reason.line.startswith("Exception: flashinfer_python with minimum required version 0.7.2 is not installed")


def test_the_captured_real_serve_log_has_no_tp_tag_at_tp_1_and_reads_cleanly():
    """0.5.23 adds " TPn" to a scheduler's log prefix only when tp_size > 1 (sglang/srt/managers/scheduler.py)."""
    text = CAPTURED_SERVE.read_text()
    assert "The server is fired up and ready to roll!" in text and " TP0]" not in text
    prefill = next(line for line in text.splitlines() if "Prefill batch" in line)
    assert strip_prefix(prefill).startswith("Prefill batch, #new-seq: ")
    assert "cpu graph: False" in prefill  # Decode/Prefill lines name the graph "cpu graph" on this build
