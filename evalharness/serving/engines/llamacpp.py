"""llama.cpp's HTTP server (`llama-server`): an OpenAI-compatible server the harness launches by argv, added as one
module plus its registry line (issue 59: a new engine is its module and a matrix).

What it is, from ggml-org/llama.cpp (tools/server/README.md at 25d5b0c; server.cpp at 00dd081, server-task.cpp and
common/sampling.cpp at 00efb3e, server-common.cpp at 006639c, src/llama.cpp at 01649e6; read 2026-12-07):
- `llama-server -m MODEL.gguf --host H --port P`; `--alias NAME` is the model name its API answers to (the file
  path otherwise). Every route answers 503 "Loading model" while the model loads; GET /health then 200
  {"status": "ok"}. Ready, it logs "srv  llama_server: model loaded" and "... server is listening on http://H:P".
- GET /props: `default_generation_settings` (its `n_ctx`, the sampling `params`), `total_slots` (`--parallel`),
  `model_path`, `chat_template`, `build_info` ("b<build>-<commit>"): what it runs. /metrics only with `--metrics`.
- A request's `seed` is read per request (`params.sampling.seed = json_value(data, "seed", ...)`) and every task
  builds its own sampler from it (`llama_sampler_init_dist(params.seed)`).
- Its prompt cache lives per slot, erased per slot (POST /slots/<id>?action=erase); no one endpoint empties every
  slot, so `cache_flush_path` is None and the prefix-cache check says it cannot flush.
- /v1/completions refuses `echo` ("Only no echo is supported") and gives log-probabilities of generated tokens only:
  no prompt token's, so the numerics check says it is unavailable. No /tokenizer_info: lm-eval's loglikelihood tasks
  split prompts with the harness's local tokenizer.
- A model it cannot load: "llama_model_load: error loading model: ...", "... failed to load model", then "exiting
  due to model loading error", exit code 1. SIGTERM and SIGINT shut it down cleanly (one process).
- Tool calls need its Jinja templates: without `--jinja` a request with tools is refused ("tools param requires
  --jinja flag"); recent builds turn it on by default (common/common.h `use_jinja = true`, at 001d906).

Nothing here runs llama.cpp: the contract test launches a stand-in written from the same sources
(tests/contract/llamacpp_standin.py); the real server is not installed on the test machine (a C++ build and a GGUF
model, neither of which the suite can fetch).
"""

from __future__ import annotations

import re
from typing import Any

import httpx

from evalharness.matrix.schema import Cell, Matrix
from evalharness.records.engine_profile import SettingSource
from evalharness.serving.engines._common import EngineDefaults, LaunchPlan, flag_given, flatten, get_json, render_args
from evalharness.serving.logscan import COMMON_CRASHES, CrashRule, LogRules

DEFAULT_COMMAND = ["llama-server"]
# lines only llama.cpp writes (diagnose guesses a log's engine by them): its loader's and its server's prefixes
MARKERS = re.compile(r"^(llama_model_loader: |llama_model_load|llama_context: |load_tensors: |srv  )", re.M)
LOG_RULES = LogRules(crashes=(
    CrashRule("model_not_found", re.compile(r"error loading model|failed to load model", re.I),
              "llama-server could not load the model: `model:` must be a GGUF file it can open",
              source="llama.cpp src/llama.cpp, tools/server/server.cpp"),
    *COMMON_CRASHES,
))
SETTINGS = {
    "context length": SettingSource("resolved", "props.default_generation_settings.n_ctx"),
    "requests at once (ceiling)": SettingSource("resolved", "props.total_slots"),
    "default sampling": SettingSource("resolved", "props.default_generation_settings.params.temperature",
                                      lambda v: f"temperature {v:.2g}" if isinstance(v, float) else v),
}  # /props does not say its KV cache dtype (-ctk) or batch sizes: the cell's own flags show them


class LlamaCppEngine(EngineDefaults):
    """`llama-server -m MODEL --host H --port P --alias NAME` plus the cell's flags (`-c`, `-np`, `-fa`, `-ctk`)."""

    name = "llamacpp"
    label = "llama.cpp"
    checks_install = False
    launches = True
    tokenizer_info = False  # no such route: loglikelihood tasks default to the harness's local tokenizer
    seeds = ("llama.cpp builds each request's sampler from its `seed` (server-task.cpp, common/sampling.cpp "
             "`llama_sampler_init_dist`), so a seed repeats its draws whatever else is in flight")
    settings = SETTINGS
    log_rules = LOG_RULES
    terminate = "group"  # one process
    load_request_extras: dict = {}
    logprob_path = None  # no log-probabilities by prompt token id: the numerics check says so
    cache_flush_path = None  # per slot only (/slots/<id>?action=erase): the prefix-cache check says it cannot flush

    def launch_plan(self, matrix: Matrix, cell: Cell, port: int, work_dir: str) -> LaunchPlan:
        served = matrix.served_model_name or matrix.model
        argv = [*(matrix.command_for(cell) or DEFAULT_COMMAND), "-m", matrix.model, "--host", matrix.host,
                "--port", str(port), "--alias", served, *render_args(cell.args)]
        root = f"http://{matrix.host}:{port}"
        return LaunchPlan(argv=argv, env=dict(cell.env), root_url=root, base_url=f"{root}/v1", health_path="/health",
                          served_model_name=served)

    def resolved_config(self, client: httpx.Client, plan: LaunchPlan, log_text: str) -> dict[str, Any]:
        """/props flattened under "props." (the chat template left out: its text, not a setting), its build as the
        version."""
        props = get_json(client, f"{plan.root_url}/props")
        out: dict[str, Any] = {"served.model": plan.served_model_name}
        if isinstance(props, dict):
            out.update(flatten({k: v for k, v in props.items() if k != "chat_template"}, "props"))
            if props.get("build_info"):
                out["version"] = props["build_info"]
        return out

    def calls_flag_notes(self, args: dict[str, Any], kinds: set[str]) -> list[str]:
        # server-common.cpp: without Jinja templates a request with tools is refused, "tools param requires --jinja
        # flag"; recent builds turn them on by default, older ones do not
        if "tools" in kinds and not flag_given(args, "--jinja"):
            return ["tool cases are refused by a llama-server build without --jinja on by default (\"tools param "
                    "requires --jinja flag\"); pass --jinja to be sure"]
        return []

    def log_markers(self, text: str) -> int:
        return len(MARKERS.findall(text))

