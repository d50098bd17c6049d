"""What every engine module shares: the launch plan type, the engine protocol, and flag rendering."""

from __future__ import annotations

import json
from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any, Protocol

import httpx
from prometheus_client.parser import text_string_to_metric_families

from evalharness.records.engine_profile import SettingSource
from evalharness.serving.logscan import LogRules
from evalharness.matrix.schema import Cell, Matrix


@dataclass(frozen=True)
class LaunchPlan:
    """How to start one cell's server and how to know it is ready. `argv` is a list, never a shell string."""

    argv: list[str]
    env: dict[str, str]
    root_url: str  # http://host:port, for /health, /metrics, /version
    base_url: str  # the OpenAI-compatible root, http://host:port/v1
    health_path: str
    served_model_name: str


class Engine(Protocol):
    """One inference engine's knowledge. Implementations are plain classes registered in engines/__init__.py; the
    rest of the package asks an engine what it can do and never branches on its name (tests/unit/test_layout.py)."""

    name: str
    label: str  # how a person names it in a sentence: "SGLang", "vLLM"
    # whether the harness starts and stops its server: False for an endpoint that is already up (no port, no GPU
    # baseline, no host watch, no relaunch for the reverse direction, nothing to spread over Ray)
    launches: bool
    # whether it serves /tokenizer_info, which lm-eval's remote tokenizer reads first (matrix/engines.py): where it
    # does not, a matrix's loglikelihood tasks default to the harness's local tokenizer
    tokenizer_info: bool
    # what it does with a request's OpenAI `seed` and where its record holds the settings the report compares by
    # meaning (records/engine_profile.py EngineProfile: the report reads them, handed in by the runner and the CLI)
    seeds: str
    settings: Mapping[str, SettingSource]
    checks_install: bool  # whether check_cells runs the cells through the installed engine (validate)
    log_rules: LogRules
    # how teardown starts (server.py): "group" SIGTERMs the whole process group (vLLM: every process handles it);
    # "launcher" SIGTERMs the launcher alone and lets it shut its children down (SGLang: its schedulers have no
    # SIGTERM handler and must be asked to release GPU memory by the launcher)
    terminate: str
    # fields every measured request adds to its body: SGLang's per-request speculative figures
    # (return_spec_tokens_details), the cross-check of its counters
    load_request_extras: dict[str, Any]
    # how the numerics check asks for log-probabilities by token id (phases/distribution.py): "completions"
    # (/v1/completions with ids and return_tokens_as_token_ids) or "generate" (SGLang's native /generate); None where
    # the engine returns none (the check is recorded unavailable, with the reason)
    logprob_path: str | None
    # the engine's endpoint that empties its prefix cache (POST; measures/prefix_cache/), None where it has none
    cache_flush_path: str | None

    def launch_plan(self, matrix: Matrix, cell: Cell, port: int, work_dir: str) -> LaunchPlan:
        """The argv, environment and URLs for one cell on one port (pure)."""
        ...

    def resolved_config(self, client: httpx.Client, plan: LaunchPlan, log_text: str) -> dict[str, Any]:
        """What the engine says it is running, flattened to 'section.key' -> value, after it is ready."""
        ...

    def server_facts(self, client: httpx.Client, plan: LaunchPlan, matrix: Matrix) -> dict[str, Any]:
        """What a user of this engine reads first about a ready server: memory, batch ceiling, startup, versions."""
        ...

    def before_load(self, client: httpx.Client, plan: LaunchPlan) -> dict[str, Any]:
        """Engine counters to read before a throughput scenario (and any reset it needs)."""
        ...

    def after_load(self, client: httpx.Client, plan: LaunchPlan, before: dict[str, Any]) -> dict[str, Any]:
        """The engine's own figures for the scenario just run, e.g. speculative acceptance, as a before/after delta."""
        ...

    def scenario_log_summary(self, log_text: str) -> dict[str, Any]:
        """The engine's own log lines written during one scenario, summarised (pure; {} when it logs none)."""
        ...

    def calls_flag_notes(self, args: dict[str, Any], kinds: set[str]) -> list[str]:
        """What a cell's launch `args` mean for the matrix's calls tasks of `kinds` ("tools", "json"), said by
        `validate` before anything is launched (pure): notes, not errors."""
        ...

    def check_cells(self, matrix: Matrix, cells: list[Cell], engine_python: str | None) -> Any | None:
        """The cells through the installed engine's own parser and environment (`validate`), or None where this
        engine has no such check (sglang_check.py: SglangCheck)."""
        ...

    def log_markers(self, text: str) -> int:
        """How many of a log's lines are this engine's own (`diagnose` guesses a log's engine by it; pure)."""
        ...


class EngineDefaults:
    """The answers of an engine that knows nothing beyond launching and serving: no server facts beyond its resolved
    settings, no counters around a scenario, no throughput lines in its log, no install check, no flag notes, and
    no log markers of its own. An engine module subclasses it (one level) and overrides what its engine does know;
    SGLang and vLLM answer every question themselves."""

    def server_facts(self, client: httpx.Client, plan: LaunchPlan, matrix: Matrix) -> dict[str, Any]:
        return {}

    def before_load(self, client: httpx.Client, plan: LaunchPlan) -> dict[str, Any]:
        return {}

    def after_load(self, client: httpx.Client, plan: LaunchPlan, before: dict[str, Any]) -> dict[str, Any]:
        return {}

    def scenario_log_summary(self, log_text: str) -> dict[str, Any]:
        return {}

    def calls_flag_notes(self, args: dict[str, Any], kinds: set[str]) -> list[str]:
        return []

    def check_cells(self, matrix: Matrix, cells: list[Cell], engine_python: str | None) -> None:
        return None

    def log_markers(self, text: str) -> int:
        return 0


def flag_given(args: dict[str, Any], flag: str) -> bool:
    """Whether a cell's launch args set `flag` (a false or missing value is not given)."""
    return args.get(flag) not in (None, False)


def render_args(args: dict[str, Any]) -> list[str]:
    """Flags to argv: true is a bare flag, false/None omits it, a mapping becomes JSON, a list several values."""
    argv: list[str] = []
    for flag, value in args.items():
        if value is None or value is False:
            continue
        if value is True:
            argv.append(flag)
        elif isinstance(value, dict):
            argv += [flag, json.dumps(value, separators=(",", ":"))]
        elif isinstance(value, list):
            argv += [flag, *(str(v) for v in value)]
        else:
            argv += [flag, str(value)]
    return argv


def server_plan(matrix: Matrix, cell: Cell, port: int, *, default_command: list[str], model_flag: str,
                env: dict[str, str], health_path: str) -> LaunchPlan:
    """The launch plan shared by engines that take `--<model flag> M --host H --port P --served-model-name N`."""
    served = matrix.served_model_name or matrix.model
    argv = [*(matrix.command_for(cell) or default_command), model_flag, matrix.model, "--host", matrix.host,
            "--port", str(port), "--served-model-name", served, *render_args(cell.args)]
    root = f"http://{matrix.host}:{port}"
    return LaunchPlan(argv=argv, env=env, root_url=root, base_url=f"{root}/v1", health_path=health_path,
                      served_model_name=served)


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """Nested JSON to 'a.b.c' -> scalar, so two engines' reports can be diffed key by key."""
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for key, value in data.items():
            out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(data, list) and any(isinstance(v, (dict, list)) for v in data):
        out = {}
        for index, value in enumerate(data):
            out.update(flatten(value, f"{prefix}[{index}]"))
        return out
    return {prefix: data}


def prometheus_totals(text: str, names: tuple[str, ...]) -> dict[str, float]:
    """Sum of each named Prometheus sample over all its label sets, from a /metrics page (pure). prometheus_client's
    parser reads labels with spaces and trailing timestamps right; a page it cannot parse counts as no figures."""
    totals: dict[str, float] = {}
    try:
        for family in text_string_to_metric_families(text):
            # a labelled counter has no sample before its first increment, only its "# TYPE" line: it is zero
            # (the parser names a counter family without "_total")
            if family.type == "counter" and not family.samples:
                for name in (family.name, f"{family.name}_total"):
                    if name in names:
                        totals.setdefault(name, 0.0)
            for sample in family.samples:
                if sample.name in names:
                    totals[sample.name] = totals.get(sample.name, 0.0) + sample.value
    except ValueError:
        return {}
    return totals


def get_json(client: httpx.Client, url: str) -> Any | None:
    """GET a JSON document, or None when the endpoint is missing or answers with something else."""
    try:
        response = client.get(url)
    except httpx.HTTPError:
        return None
    if response.status_code != 200:
        return None
    try:
        return response.json()
    except ValueError:
        return None
