"""SGLang: launch argv, readiness, log knowledge and the resolved configuration from /server_info.

Messages below are SGLang's own (model_config.py, server_args.py, the speculative workers), as printed on the story's
SM120 box and in FACTS.md. Readiness is /health_generate: it answers 503 until a real generation goes through, which
is what "ready" means to a user, where /health can answer before the first batch ever runs.
"""

from __future__ import annotations

import re
from typing import Any

import httpx

from evalharness.serving.engines._common import LaunchPlan, flatten, get_json, server_plan
from evalharness.serving.logscan import CrashRule, LogRules, WarningRule
from evalharness.matrix.schema import Cell, Matrix

DEFAULT_COMMAND = ["sglang", "serve"]

LOG_RULES = LogRules(
    crashes=(
        CrashRule(
            "unsupported_kernel",
            re.compile(r"Unsupported architecture|only supports? (SM ?100|sm_?100|Blackwell datacenter)|sm_?100a? only|"
                       r"no kernel image is available for execution on the device", re.I),
            "a kernel built for another GPU architecture (e.g. SM100-only on SM120)",
        ),
        CrashRule(
            "config_conflict",
            re.compile(r"Spec v2 currently only supports topk = 1|speculative_eagle_topk must be|"
                       r"requires --mamba-\w+|not supported (with|for) speculative", re.I),
            "speculative-decoding settings that this SGLang cannot combine",
        ),
    ),
    warnings=(
        WarningRule(
            "deepgemm_scale_fmt",
            re.compile(r"DeepGemm is enabled but the scale_fmt of checkpoint is not (?P<expected_fmt>\w+)"),
        ),
        WarningRule(
            "max_running_requests_reset",
            re.compile(r"Max running requests is reset to (?P<max_running_requests>\d+)(?: for (?P<reason>[\w ]+))?"),
        ),
        WarningRule("spec_v2_topk", re.compile(r"Spec v2 currently only supports topk = (?P<topk>\d+)")),
        WarningRule("attention_backend_switch", re.compile(r"(?:attention backend|attention_backend)\D{0,40}(?:is |to |set to )(?P<backend>\w+)", re.I)),
        WarningRule("deprecated_entrypoint", re.compile(r"'python -m sglang\.launch_server' is still supported")),
        WarningRule("accuracy", re.compile(r"might cause accuracy degradation|may (cause|lead to) (accuracy|precision) (loss|degradation)", re.I)),
        WarningRule("cuda_graph_disabled", re.compile(r"(?:Disable|disabling) cuda graph", re.I)),
    ),
)

# Keys of /server_info that differ by construction between cells or change every second: not configuration.
_VOLATILE = re.compile(
    r"^(port|host|nccl_port|dist_init_addr|random_seed|served_model_name|model_path|tokenizer_path|"
    r"internal_states.*|last_gen_throughput|memory_usage.*|.*_timestamp|.*\.pid|pid)$"
)


class SglangEngine:
    """Knowledge of SGLang's server (`sglang serve`, or `python -m sglang.launch_server` through `command`)."""

    name = "sglang"
    log_rules = LOG_RULES

    def launch_plan(self, matrix: Matrix, cell: Cell, port: int, work_dir: str) -> LaunchPlan:
        return server_plan(matrix, cell, port, default_command=DEFAULT_COMMAND, model_flag="--model-path",
                           env=dict(cell.env), health_path="/health_generate")

    def resolved_config(self, client: httpx.Client, plan: LaunchPlan, log_text: str) -> dict[str, Any]:
        info = get_json(client, f"{plan.root_url}/server_info")
        if info is None:  # SGLang before the rename
            info = get_json(client, f"{plan.root_url}/get_server_info")
        if not isinstance(info, dict):
            return {}
        return {k: v for k, v in flatten(info).items() if not _VOLATILE.match(k)}

    def before_load(self, client: httpx.Client, plan: LaunchPlan) -> dict[str, float]:
        # avg_spec_accept_length is cumulative since start; /flush_cache (idle server: the runner calls this after the
        # warm-up, with nothing in flight) resets it, so the figure read after the scenario is the scenario's own.
        try:
            flushed = client.post(f"{plan.root_url}/flush_cache").status_code == 200
        except httpx.HTTPError:
            flushed = False
        return {"flushed": 1.0 if flushed else 0.0}

    def after_load(self, client: httpx.Client, plan: LaunchPlan, before: dict[str, float]) -> dict[str, Any]:
        info = get_json(client, f"{plan.root_url}/server_info") or get_json(client, f"{plan.root_url}/get_server_info")
        states = (info or {}).get("internal_states") or []
        lengths = [s.get("avg_spec_accept_length") for s in states if isinstance(s, dict)]
        lengths = [v for v in lengths if isinstance(v, (int, float))]
        if not lengths:
            return {}
        mean = sum(lengths) / len(lengths)
        if not before.get("flushed"):  # not reset: the figure covers every request since startup, not this scenario
            return {"spec_acceptance_length_since_start": mean}
        return {"spec_mean_acceptance_length": mean}
