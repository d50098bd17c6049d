"""Hugging Face transformers' own server (`transformers serve`, transformers 5.x): a third launched engine, an
OpenAI-compatible server the harness starts by argv, added as one module (issue 59).

What it is (transformers 5.19.0 in the engine environment, SmolLM2-135M on CPU, 2026-12-07): a FastAPI server whose
`FORCE_MODEL` argument pins one model for every request; requests must name that model as given (a path is its own
name: "Server is pinned to '<path>'; requested 'x'" otherwise), so it takes no served-model alias. It answers
/v1/chat/completions (streamed, with usage in the last chunk when asked) and /v1/completions, /health when up; its
/v1/models raised a server error offline; it returns no log-probabilities, so the numerics check reports itself
unavailable here; and it refuses a request with a field it does not know (422 "Unexpected fields in the request:
{'ignore_eos'}"), so a throughput scenario on it sets `ignore_eos: false`. No prefix-cache endpoint, no metrics page,
no version endpoint.
"""

from __future__ import annotations

import re
from typing import Any

import httpx

from evalharness.serving.engines._common import EngineDefaults, LaunchPlan, get_json, render_args
from evalharness.serving.logscan import LogRules
from evalharness.matrix.schema import Cell, Matrix

DEFAULT_COMMAND = ["transformers", "serve"]
# lines only this server writes (diagnose guesses a log's engine by them)
MARKERS = re.compile(r"^\[transformers\]", re.M)


class TransformersEngine(EngineDefaults):
    """`transformers serve MODEL --host H --port P` plus the cell's flags (`--dtype`, `--continuous-batching`, ...)."""

    name = "transformers"
    label = "transformers serve"
    checks_install = False
    launches = True
    tokenizer_info = False  # no such route (a 404 on 5.19.0): matrices/cpu-transformers.yaml splits prompts locally
    seeds = ("transformers serve sets the process's torch seed, `torch.manual_seed(seed)`, as it builds a request's "
             "generation config (transformers/cli/serving/utils.py): one global generator, so a seed repeats its "
             "draws only while requests come one at a time")
    settings: dict = {}  # it reports no resolved settings (no /server_info, no config line)
    log_rules = LogRules()  # the shared crash rules (serving/logscan.py) are all it needs so far
    terminate = "group"  # one uvicorn process, which handles SIGTERM
    load_request_extras: dict = {}
    logprob_path = None  # it returns none (its request models refuse the fields): the numerics check says so
    cache_flush_path = None

    def launch_plan(self, matrix: Matrix, cell: Cell, port: int, work_dir: str) -> LaunchPlan:
        argv = [*(matrix.command_for(cell) or DEFAULT_COMMAND), matrix.model, "--host", matrix.host,
                "--port", str(port), *render_args(cell.args)]
        root = f"http://{matrix.host}:{port}"
        return LaunchPlan(argv=argv, env={"HF_HUB_DISABLE_TELEMETRY": "1", **cell.env}, root_url=root,
                          base_url=f"{root}/v1", health_path="/health", served_model_name=matrix.model)

    def resolved_config(self, client: httpx.Client, plan: LaunchPlan, log_text: str) -> dict[str, Any]:
        health = get_json(client, f"{plan.root_url}/health")
        return {"served.model": plan.served_model_name, "health": health.get("status")} \
            if isinstance(health, dict) else {"served.model": plan.served_model_name}

    def log_markers(self, text: str) -> int:
        return len(MARKERS.findall(text))
