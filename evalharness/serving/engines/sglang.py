"""SGLang: launch argv, readiness, teardown style, the resolved configuration and per-cell facts from /server_info,
and speculative acceptance from /metrics. Log knowledge lives in sglang_logs.py, the preflight in sglang_check.py.

Every behaviour below is SGLang 0.5.23's as read in its wheel (requirements/sglang-engine.txt pins it):
- readiness is /health_generate: 503 while starting, then 200 once one token was generated
  (sglang/srt/entrypoints/http_server.py: health_generate);
- teardown SIGTERMs the launcher only: it drains, sends ShutdownReq to the schedulers and gives them 15 s to exit
  (sglang/srt/managers/tokenizer_manager.py: sigterm_watchdog, _SCHEDULER_EXIT_TIMEOUT_SECS); a scheduler that exits
  gracefully releases its host resources (pinned host buffers: managers/scheduler.py run_scheduler_process,
  release_host_resources), and the driver frees its GPU memory when the process ends. The schedulers have no SIGTERM
  handler, so a group SIGTERM kills them mid-work. The launcher's graceful handler exists only from the first request
  (tokenizer_manager.py: auto_create_handle_loop; SGLang's own warm-up before "fired up" is one): a SIGTERM while
  loading kills the launcher outright. SGLang's own tests do
  the same (sglang/test/test_utils.py: terminate_and_kill_process_tree);
- /server_info = the resolved server args + launch_command + scheduler info + startup_time + internal_states
  (sglang/srt/entrypoints/http_server.py: server_info; sglang/srt/utils/common.py: build_server_info);
  internal_states[i] carries memory_usage, effective_max_running_requests_per_dp and avg_spec_accept_length
  (sglang/srt/managers/scheduler_components/internal_state.py);
- /flush_cache answers 400 while anything runs or waits; `?timeout=N` waits up to N s for idle
  (http_server.py: flush_cache; sglang/srt/managers/scheduler_components/flush_wrapper.py);
- avg_spec_accept_length only accumulates every decode_log_interval (40) decode steps
  (sglang/srt/managers/scheduler_components/metrics_reporter.py: report_decode_stats), so it is never the figure;
  the exact one is the Prometheus counters' delta (needs --enable-metrics): sglang:generation_tokens_total /
  sglang:spec_verify_calls_total, SGLang's own per-request formula completion_tokens / spec_verify_ct
  (sglang/srt/observability/metrics_collector.py: observe_one_finished_request;
  sglang/srt/managers/tokenizer_manager.py: spec_accept_length).
"""

from __future__ import annotations

import re
from typing import Any

import httpx

from evalharness.matrix.schema import Cell, Matrix
from evalharness.records.engine_profile import MODEL_OWN, SettingSource, negated, torch_dtype
from evalharness.serving.engines._common import (LaunchPlan, flag_given, flatten, get_json, prometheus_totals,
                                                 server_plan)
from evalharness.serving.engines.sglang_check import SglangCheck, check_cells, engine_versions, find_python
from evalharness.serving.engines.sglang_logs import LOG_RULES, MARKERS, decode_summary

DEFAULT_COMMAND = ["sglang", "serve"]
FLUSH_TIMEOUT_S = 60  # /flush_cache?timeout=N: how long SGLang may wait for the server to go idle

# Keys of /server_info that differ by construction between cells or change every second: not configuration.
# launch_command holds the random port; startup_time.* is a measurement (shown in the facts, never as a setting).
_VOLATILE = re.compile(
    r"^(port|host|nccl_port|dist_init_addr|random_seed|served_model_name|model_path|tokenizer_path|"
    r"launch_command|startup_time.*|internal_states.*|last_gen_throughput|memory_usage.*|.*_timestamp|.*\.pid|pid|"
    r"kv_events.*|metrics_port|.*_port)$"
)
# Keys that 0.5.23's /server_info adds after the server args (sglang/srt/entrypoints/http_server.py: server_info;
# sglang/srt/utils/common.py: build_server_info): measured at startup, not chosen. max_total_num_tokens and
# max_req_input_len are sized from the memory free at that moment, so they differ a little between two launches of
# the same settings; as settings they would make every "axis changed nothing" check fail. Shown in the Server facts.
MEASURED = ("max_total_num_tokens", "max_req_input_len", "status", "version")
COUNTERS = ("sglang:generation_tokens_total", "sglang:spec_verify_calls_total")


def server_info(client: httpx.Client, plan: LaunchPlan) -> dict[str, Any]:
    info = get_json(client, f"{plan.root_url}/server_info")
    if info is None:  # SGLang before the rename
        info = get_json(client, f"{plan.root_url}/get_server_info")
    return info if isinstance(info, dict) else {}


# where the report finds each setting it compares by meaning (records/engine_profile.py): /server_info
# (`resolved_config`) and its measured facts (`server_facts`). SGLang reports every setting, None for the model's own;
# sampling_defaults "model" takes the model's generation_config.json (sglang/srt/server_args.py)
SETTINGS = {
    "weights dtype": SettingSource("resolved", "dtype", torch_dtype),
    "KV cache dtype": SettingSource("resolved", "kv_cache_dtype"),
    "context length": SettingSource("resolved", "context_length"),
    "KV cache tokens": SettingSource("server", "token_capacity"),
    "requests at once (ceiling)": SettingSource("server", "max_running_requests"),
    "tokenizer mode": SettingSource("resolved", "tokenizer_mode"),
    "quantization": SettingSource("resolved", "quantization"),
    "prefix caching": SettingSource("resolved", "disable_radix_cache", negated),
    "chunked prefill": SettingSource("resolved", "chunked_prefill_size", lambda v: v is not None and v > 0),
    "default sampling": SettingSource("resolved", "sampling_defaults", lambda v: MODEL_OWN if v == "model" else v),
    "chat template": SettingSource("resolved", "chat_template", lambda v: v or MODEL_OWN),
}


class SglangEngine:
    """Knowledge of SGLang's server (`sglang serve`, or `python -m sglang.launch_server` through `command`)."""

    name = "sglang"
    label = "SGLang"
    checks_install = True
    launches = True
    tokenizer_info = False  # 0.5.23: /tokenize only, /tokenizer_info answers 404 (srt/entrypoints/http_server.py)
    seeds = ("SGLang maps `seed` to `sampling_seed` (srt/entrypoints/openai/protocol.py) and uses it only "
             "with --enable-deterministic-inference (srt/sampling/sampling_batch_info.py): otherwise it is "
             "ignored and repeats of one seed differ")
    settings = SETTINGS
    log_rules = LOG_RULES
    terminate = "launcher"  # SIGTERM to the launcher only, then the tree (see the module docstring)
    # sglang/srt/entrypoints/openai/protocol.py (return_spec_tokens_details, SpecTokensDetails): each response ends
    # with an `sglext.spec_tokens_details` event carrying the request's own spec_verify_ct
    load_request_extras = {"return_spec_tokens_details": True}
    # its /v1/completions echo gives text tokens and text_offset -1 (srt/entrypoints/openai/utils.py); /generate ids
    logprob_path = "generate"
    cache_flush_path = "/flush_cache"  # srt/entrypoints/http_server.py, GET or POST, 400 while requests run

    def calls_flag_notes(self, args: dict[str, Any], kinds: set[str]) -> list[str]:
        # 0.5.23 returns calls as text without a tool parser (srt/entrypoints/openai/serving_chat.py) and answers
        # HTTP 400 "Grammar-based generation (json_schema, regex, ebnf, structural_tag) is not supported when the
        # server is launched with --grammar-backend none" (measured, 2026-12-04)
        notes = []
        if "tools" in kinds and not flag_given(args, "--tool-call-parser"):
            notes.append("no --tool-call-parser: SGLang returns calls as text, scored as no call")
        if kinds and str(args.get("--grammar-backend")) == "none":
            notes.append("--grammar-backend none: SGLang 0.5.23 refuses every request with tools (it constrains "
                         "calls with a structural tag, whatever the tool_choice) or a response_format json_schema; "
                         "counted as refused")
        return notes

    def check_cells(self, matrix: Matrix, cells: list[Cell], engine_python: str | None) -> SglangCheck:
        return check_cells(matrix, cells, engine_python)

    def log_markers(self, text: str) -> int:
        return len(MARKERS.findall(text))

    def launch_plan(self, matrix: Matrix, cell: Cell, port: int, work_dir: str) -> LaunchPlan:
        plan = server_plan(matrix, cell, port, default_command=DEFAULT_COMMAND, model_flag="--model-path",
                           env=dict(cell.env), health_path="/health_generate")
        # the acceptance figure needs /metrics; `--enable-metrics: false` opts out
        if "--enable-metrics" not in cell.args:
            plan.argv.append("--enable-metrics")
        return plan

    def resolved_config(self, client: httpx.Client, plan: LaunchPlan, log_text: str) -> dict[str, Any]:
        return {k: v for k, v in flatten(server_info(client, plan)).items()
                if not _VOLATILE.match(k) and k not in MEASURED}

    def server_facts(self, client: httpx.Client, plan: LaunchPlan, matrix: Matrix) -> dict[str, Any]:
        return sglang_facts(server_info(client, plan), engine_versions(find_python(plan.argv[:1])))

    def before_load(self, client: httpx.Client, plan: LaunchPlan) -> dict[str, Any]:
        # the runner calls this after the warm-up with nothing of ours in flight; a refused flush means something else
        # still runs on the server, and its tokens would land in the counters' delta
        try:
            response = client.post(f"{plan.root_url}/flush_cache", params={"timeout": FLUSH_TIMEOUT_S},
                                   timeout=FLUSH_TIMEOUT_S + 10)
            flush = {"flush_status": response.status_code, "flush_message": response.text.strip()[:200]}
        except httpx.HTTPError as exc:
            flush = {"flush_status": None, "flush_message": f"{type(exc).__name__}: {exc}"}
        return {**flush, **self._counters(client, plan)}

    def after_load(self, client: httpx.Client, plan: LaunchPlan, before: dict[str, Any]) -> dict[str, Any]:
        speculative = bool(server_info(client, plan).get("speculative_algorithm"))
        return acceptance(before, self._counters(client, plan), speculative)

    def scenario_log_summary(self, log_text: str) -> dict[str, Any]:
        return decode_summary(log_text)

    @staticmethod
    def _counters(client: httpx.Client, plan: LaunchPlan) -> dict[str, Any]:
        try:
            response = client.get(f"{plan.root_url}/metrics")
        except httpx.HTTPError:
            return {"metrics": "unreachable"}
        if response.status_code != 200:
            return {"metrics": f"HTTP {response.status_code} (start SGLang with --enable-metrics)"}
        return prometheus_totals(response.text, COUNTERS)


def acceptance(before: dict[str, Any], after: dict[str, Any], speculative: bool) -> dict[str, Any]:
    """The scenario's speculative acceptance length from SGLang's counters, or no figure with the reason (pure)."""
    if not speculative:
        return {}
    status = before.get("flush_status")
    if status != 200:
        return {"spec_unavailable": f"/flush_cache answered {status or 'nothing'} "
                f"({before.get('flush_message') or 'no message'}): requests still ran on the server, so the counters "
                "would count them too"}
    missing = [k for k in COUNTERS if k not in before or k not in after]
    if missing:
        why = before.get("metrics") or after.get("metrics") or f"no {', '.join(missing)} on /metrics"
        return {"spec_unavailable": f"no counters: {why}; avg_spec_accept_length is not used (it counts only every "
                "40th decode step)"}
    tokens = after[COUNTERS[0]] - before[COUNTERS[0]]
    verifies = after[COUNTERS[1]] - before[COUNTERS[1]]
    if verifies <= 0:
        return {"spec_unavailable": "no speculative verify step counted during the scenario"}
    return {"spec_mean_acceptance_length": tokens / verifies, "spec_verify_calls": verifies,
            "spec_generated_tokens": tokens, "spec_source": "metrics delta"}


def sglang_facts(info: dict[str, Any], versions: dict[str, str]) -> dict[str, Any]:
    """What an SGLang user reads first about a cell, from /server_info (pure): memory, effective batch ceiling,
    startup breakdown, versions."""
    states = [s for s in info.get("internal_states") or [] if isinstance(s, dict)]
    state = states[0] if states else {}
    memory = state.get("memory_usage") or {}
    graph = memory.get("graph") or {}
    startup = info.get("startup_time") or state.get("startup_time") or {}
    return {
        "memory_gb": {k: v for k, v in {
            "weights": memory.get("weight"), "kv_cache": memory.get("kvcache"),
            "cuda_graph": round(sum(v for v in graph.values() if isinstance(v, (int, float))), 3) if graph else None,
            "available_at_startup": memory.get("startup_available")}.items() if v is not None},
        "token_capacity": memory.get("token_capacity") or info.get("max_total_num_tokens"),
        "max_req_input_len": info.get("max_req_input_len"),
        "status": info.get("status"),
        "max_running_requests": state.get("effective_max_running_requests_per_dp") or info.get("max_running_requests"),
        "startup_s": {k: round(v, 2) for k, v in flatten(startup).items() if isinstance(v, (int, float)) and v},
        "versions": {**({"sglang": str(info["version"])} if info.get("version") else {}), **versions},
        "launch_command": info.get("launch_command"),
    }
