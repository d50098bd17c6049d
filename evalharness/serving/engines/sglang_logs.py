"""What SGLang's log says, by version: crash classes, warnings with their values, and the server's own "Decode batch"
lines summarised. Pure data and pure functions.

Every pattern names the file it was copied from: a path under `sglang/` is SGLang 0.5.23 as pinned in
requirements/sglang-engine.txt (read in its wheel); "flashinfer/..." is FlashInfer's source (a dependency that the
pinned wheel does not ship; the texts are FlashInfer's own); "story" is a line that only the story's older SGLang
build printed (../shared/seed), kept so that logs of that build still classify.

0.5.23 logs `[2026-03-07 15:22:11 TP0] message` (sglang/srt/utils/common.py: configure_logger; the " TPn" / " DPn"
prefix from sglang/srt/managers/scheduler.py, " TPn" only when tp_size > 1: a TP 1 server logs `[time] message`) with
no level: warnings are known by their text, not a WARNING tag.
The story's build printed `[time] WARNING model_config.py:1012: message`; both forms are stripped by logscan.
"""

from __future__ import annotations

import re
import statistics
from typing import Any

from evalharness.serving.logscan import CrashRule, LogRules, WarningRule

_I = re.IGNORECASE

CRASHES = (
    CrashRule(
        "unsupported_kernel",
        re.compile(r"BackendSupportedError|does not support compute capability \d+|"
                   r"does not support backend '\w+'(?: with capability \d+)?|No suitable auto backends found for \w+"),
        "a FlashInfer backend this GPU's compute capability does not have (trtllm-gen kernels are SM100-only): pick "
        "another backend for SM120",
        source="flashinfer/utils.py: backend_requirement (raised inside SGLang's MoE/GEMM runners)",
    ),
    CrashRule(
        "unsupported_kernel",
        re.compile(r"Artifact not found locally: \S*|flashinfer-cubin is missing this file|"
                   r"(?:failed to|cannot|could not) (?:load|find|get) (?:the )?cubin", _I),
        "a precompiled FlashInfer kernel (cubin) that this GPU architecture or install lacks",
        source="flashinfer/jit/cubin_loader.py: get_artifact",
    ),
    CrashRule(
        "unsupported_kernel",
        re.compile(r"Unsupported architecture|only supports? (SM ?100|sm_?100|Blackwell datacenter)|sm_?100a? only|"
                   r"no kernel image is available for execution on the device", _I),
        "a kernel built for another GPU architecture (e.g. SM100-only on SM120)",
        source="story (SM100-only kernel on SM120); CUDA's own 'no kernel image' error",
    ),
    CrashRule(
        "unsupported_kernel",
        re.compile(r"cubin manifest contains no kernels runnable on sm_?\d+"),
        "FlashInfer's trtllm-gen kernels ship as cubins for sm100/sm103/sm107 only: on SM120 pick another "
        "--moe-runner-backend / --fp4-gemm-backend (flashinfer_cutlass, triton, ...)",
        source="flashinfer/csrc/trtllm_batched_gemm_runner.cu (FlashInfer 0.7.2, the version 0.5.23 pins: "
               "no config for the arch)",
    ),
    CrashRule(
        "unsupported_kernel",
        re.compile(r"Failed to get checksums\.txt from \S+"),
        "FlashInfer could not fetch its trtllm-gen cubins (an offline box downloads nothing): install the "
        "flashinfer-cubin package of the same version (0.7.2) or copy a cubin cache and point FLASHINFER_CUBIN_DIR "
        "at it; on SM120 these kernels do not exist anyway (no sm120 cubins), so pick another MoE backend",
        source="flashinfer/jit/fused_moe.py (FlashInfer 0.7.2: gen_trtllm_gen_fused_moe_sm100_module, assert checksum)",
    ),
    CrashRule(
        "unsupported_kernel",
        re.compile(r"\w+ with minimum required version [\w.]+ is not installed|"
                   r"\w+ is installed with version \S+, which is less than the minimum required version"),
        "the kernel package a chosen backend needs is missing or too old in this environment (flashinfer_python "
        ">= 0.7.2 for --attention-backend flashinfer): pick another backend or install the package",
        source="sglang/srt/utils/common.py: assert_pkg_version (called at launch by sglang/srt/entrypoints/engine.py)",
    ),
    CrashRule(
        "out_of_memory",
        re.compile(r"Rank \d+ scheduler died during initialization \(exit code: -9\)"),
        "a scheduler was SIGKILLed while loading, most often by the OS OOM killer (host RAM, not GPU memory): "
        "check `dmesg -T | grep -i oom`, load fewer weights per process or add RAM/swap",
        source="sglang/srt/entrypoints/engine.py: _scheduler_died_error",
    ),
    CrashRule(
        "out_of_memory",
        re.compile(r"Not enough memory\. Please try to increase --mem-fraction-static"),
        "no room left for the KV cache: raise --mem-fraction-static or lower --context-length / "
        "--max-running-requests",
        source="sglang/srt/model_executor/pool_configurator.py",
    ),
    CrashRule(
        "port_in_use",
        re.compile(r"\w+ at \d+ is not available in \d+ seconds|\w+ is used by a process already|"
                   r"Port is already in use\."),
        "a port SGLang derives from --port is still held (often by the previous server still shutting down): "
        "wait for it, or raise SGLANG_WAIT_PORT_TIMEOUT",
        source="sglang/srt/utils/network.py: wait_port_available; sglang/srt/server_args.py (PortArgs)",
    ),
    CrashRule(
        "config_conflict",
        re.compile(r"Spec v2 currently only supports topk = 1|speculative_eagle_topk must be|"
                   r"requires --mamba-\w+|not supported (with|for) speculative", _I),
        "speculative-decoding settings that this SGLang cannot combine",
        source="story (older build)",
    ),
)

WARNINGS = (
    WarningRule(
        "max_running_requests_reset",
        re.compile(r"Max running requests is reset to (?P<max_running_requests>\d+)(?: for (?P<reason>[\w ]+))?"),
        source="sglang/srt/arg_groups/speculative_hook.py (0.5.23; server_args.py:2629 in the story's build)",
        meaning="a fixed ceiling set because --max-running-requests was not given: speculative cells then run a "
                "different batch limit than the others; set --max-running-requests on every cell",
    ),
    WarningRule(
        "deepgemm_scale_fmt",
        re.compile(r"DeepGemm is enabled but the scale_fmt of checkpoint is not (?P<expected_fmt>\w+)"),
        source="story (model_config.py:1012 of an older build; gone from 0.5.23)",
        meaning="DeepGEMM runs on a checkpoint whose scales it was not made for: compare the deepgemm=off cell's "
                "accuracy before trusting the on cell",
    ),
    WarningRule(
        "spec_v2_topk",
        re.compile(r"Spec v2 currently only supports topk = (?P<topk>\d+)"),
        source="story (older build; gone from 0.5.23)",
        meaning="speculative decoding falls back or refuses other topk values: keep --speculative-eagle-topk 1",
    ),
    WarningRule(
        "schedulers_killed_before_release",
        re.compile(r"Schedulers still alive (?P<seconds>\d+)s after ShutdownReq, killing them before they released"),
        source="sglang/srt/managers/tokenizer_manager.py: sigterm_watchdog",
        meaning="shutdown killed schedulers mid-release: GPU memory may stay held for minutes; the next cell waits",
    ),
    WarningRule(
        "cache_not_flushed",
        re.compile(r"Cache not flushed because there are pending requests\. #queue-req: (?P<queue>\d+), "
                   r"#running-req: (?P<running>\d+)"),
        source="sglang/srt/managers/scheduler.py: flush_cache",
        meaning="/flush_cache was refused while requests ran: figures that needed the reset are not shown",
    ),
    WarningRule(
        "flush_timed_out",
        re.compile(r"Deferred flush_cache timed out while waiting for idle state"),
        source="sglang/srt/managers/scheduler_components/flush_wrapper.py",
        meaning="/flush_cache?timeout=N never saw an idle server: something kept requests running",
    ),
    WarningRule(
        "health_check_failed",
        re.compile(r"Health check failed\. Server couldn't get a response from detokenizer for last "
                   r"(?P<seconds>\d+) seconds"),
        source="sglang/srt/entrypoints/http_server.py: health_generate",
        meaning="the server stopped answering generation for a while (hung scheduler, or overloaded)",
    ),
    WarningRule(
        "port_wait",
        re.compile(r"The port (?P<port>\d+) is in use, but we could not find the process that uses it"),
        source="sglang/srt/utils/network.py: wait_port_available",
        meaning="a port was still held at launch, usually by the previous server shutting down",
    ),
    WarningRule(
        "deepgemm_warmup_reduced",
        re.compile(r"Available memory (?P<budget_gb>[\d.]+)GB is less than required memory (?P<required_gb>[\d.]+)GB "
                   r"for warmup, reducing max_m to (?P<max_m>\d+)"),
        source="sglang/srt/layers/deep_gemm_wrapper/compile_utils.py",
        meaning="DeepGEMM precompiled fewer shapes than usual: larger batches compile at run time (slow first hits)",
    ),
    WarningRule(
        "cuda_graph_disabled",
        re.compile(r"Cuda graph is disabled because (?P<reason>.+)$", _I),
        source="sglang/srt/arg_groups/moe_hook.py and serving_hook.py",
        meaning="this cell runs without CUDA graphs: much slower decode, not comparable with graph cells",
    ),
    WarningRule(
        "env_deprecated",
        re.compile(r"Environment variable (?P<variable>\w+) is deprecated(?:, please use (?P<replacement>\w+))?"),
        source="sglang/srt/environ.py: _handle_deprecated_envs (SGL_ is rewritten to SGLANG_)",
        meaning="the matrix uses an old variable name; it still works through SGLang's rewrite, rename it",
    ),
    WarningRule(
        "deprecated_entrypoint",
        re.compile(r"'python -m sglang\.launch_server' is still supported"),
        source="sglang/launch_server.py",
        meaning="harmless: `sglang serve` is the recommended launcher",
    ),
    WarningRule(
        "accuracy",
        re.compile(r"might cause accuracy degradation|may (cause|lead to) (accuracy|precision) (loss|degradation)", _I),
        source="story (several SGLang modules warn this way)",
        meaning="the engine itself expects drift: read this cell's drift column",
    ),
)

LOG_RULES = LogRules(crashes=CRASHES, warnings=WARNINGS)

# Lines by which a log is known to be SGLang's (for `evalharness diagnose` without --engine)
MARKERS = re.compile(r"sglang|The server is fired up and ready to roll|Decode batch|Prefill batch|sglang::scheduler|"
                     r"--mem-fraction-static|server_args=ServerArgs\(")

# sglang/srt/managers/scheduler_components/metrics_reporter.py: report_decode_stats (every decode_log_interval = 40
# decode steps, sglang/srt/arg_groups/fields/observability.py), e.g.
# "Decode batch, #running-req: 4, #token: 1234, token usage: 0.01, accept len: 1.85, accept rate: 0.85,
#  cuda graph: True, gen throughput (token/s): 123.45, #queue-req: 0"
_DECODE = re.compile(r"Decode batch(?: \[\d+\])?, #running-req: (?P<running>\d+),.*?"
                     r"(?:accept len: (?P<accept>[\d.]+), .*?)?(?P<graph_label>\w+ graph): (?P<graph>True|False), "
                     r"gen throughput \(token/s\): (?P<tput>[\d.]+), #queue-req: (?P<queue>\d+)")


def decode_summary(log_text: str) -> dict[str, Any]:
    """The server's own "Decode batch" lines of a stretch of log, summarised (pure): how many, CUDA graph on/off/mixed,
    mean accept length, median and max generation throughput, the largest queue and running batch. Empty when the
    stretch holds none (fewer than 40 decode steps, or another engine)."""
    found = [m for m in map(_DECODE.search, log_text.splitlines()) if m]
    if not found:
        return {}
    graphs = {m.group("graph") for m in found}
    tputs = [float(m.group("tput")) for m in found]
    accepts = [float(m.group("accept")) for m in found if m.group("accept")]
    out: dict[str, Any] = {
        "server_decode_lines": len(found),
        "server_cuda_graph": "on" if graphs == {"True"} else "off" if graphs == {"False"} else "mixed",
        "server_gen_tok_s_median": round(statistics.median(tputs), 2),
        "server_gen_tok_s_max": max(tputs),
        "server_queue_max": max(int(m.group("queue")) for m in found),
        "server_running_max": max(int(m.group("running")) for m in found),
    }
    if accepts:
        out["server_accept_len_mean"] = round(statistics.fmean(accepts), 3)
    return out
