"""An OpenAI-compatible endpoint that is already up: nothing to launch, only readiness and what it reports."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import httpx

from evalharness.serving.engines._common import EngineDefaults, LaunchPlan, get_json
from evalharness.serving.logscan import LogRules
from evalharness.matrix.schema import Cell, Matrix


class ExternalEngine(EngineDefaults):
    """The harness neither starts nor stops this server; it polls `<base_url>/models` for readiness."""

    name = "external"
    label = "the external endpoint"
    checks_install = False
    launches = False
    tokenizer_info = True  # unknown make: the remote tokenizer is tried, and a 404 fails the task with its reason
    seeds = "an external endpoint: unknown whether it honours per-request seeds"
    settings: dict = {}  # an endpoint of unknown make: nothing is read as a setting
    log_rules = LogRules()
    terminate = "group"  # never used: nothing is launched
    load_request_extras: dict = {}
    logprob_path = "completions"  # an OpenAI-compatible server; one that gives no ids is reported unavailable
    cache_flush_path = None  # an endpoint of unknown make: prefix_cache.flush_path names one

    def launch_plan(self, matrix: Matrix, cell: Cell, port: int, work_dir: str) -> LaunchPlan:
        base = (matrix.base_url or "").rstrip("/")
        parts = urlsplit(base)
        root = f"{parts.scheme}://{parts.netloc}"
        return LaunchPlan(
            argv=[],
            env={},
            root_url=root,
            base_url=base,
            health_path=base[len(root):] + "/models",
            served_model_name=matrix.served_model_name or matrix.model,
        )

    def resolved_config(self, client: httpx.Client, plan: LaunchPlan, log_text: str) -> dict[str, Any]:
        resolved: dict[str, Any] = {}
        version = get_json(client, f"{plan.root_url}/version")
        if isinstance(version, dict) and "version" in version:
            resolved["version"] = version["version"]
        models = get_json(client, f"{plan.base_url}/models")
        if isinstance(models, dict) and models.get("data"):
            resolved["served.models"] = ",".join(str(m.get("id")) for m in models["data"])
        return resolved
