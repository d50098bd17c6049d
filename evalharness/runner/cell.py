"""One cell, start to finish: launch, readiness, resolved configuration, the phases, teardown; the cell's state while
it runs and the CellResult it freezes into.

A cell's failure is a result, never the run's end: whatever happens inside one cell is recorded on that cell. An
interrupt tears the server down first and is then raised to the run loop (run.py).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx

from evalharness.matrix.schema import Cell, Matrix
from evalharness.phases import distribution
from evalharness.phases.probes import DEFAULT_PROBES, ask_all, judge_outputs, load_probes
from evalharness.phases.quality import SHIPPED_TASKS, run_quality
from evalharness.phases.retries import ServerDied, judge_tally
from evalharness.phases.throughput.client import LoadClient, run_scenario
from evalharness.phases.throughput.prompts import load_source
from evalharness.records.cellfiles import load_probe_outputs, save_probe_outputs
from evalharness.records.masking import mask_args, mask_argv, mask_env
from evalharness.records.measures import ProbeSummary, RequestTally, ScenarioResult, TaskScore
from evalharness.records.provenance import now_iso
from evalharness.records.run import CellResult, TeardownRecord
from evalharness.runner.cellfolders import mark
from evalharness.runner.phaseclock import PhaseClock
from evalharness.runner.progress import Progress
from evalharness.runner.signals import INTERRUPT, Interrupted
from evalharness.serving.engines import Engine, LaunchPlan
from evalharness.serving.host import free_port, gpu_memory_released, gpu_memory_used_mib, port_in_use
from evalharness.serving.logscan import classify_crash, extract_warnings
from evalharness.serving.server import LaunchError, ServerProcess, wait_external


class _CellStopped(Exception):
    """A phase judged the cell (status and reason already set): its remaining phases would measure nothing."""


def _read_log(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""


class CellRun:
    """The mutable state of one cell while it runs; `result()` freezes it into a CellResult."""

    def __init__(self, cell: Cell, plan: LaunchPlan, run_dir: Path):
        self.cell = cell
        self.plan = plan
        self.run_dir = run_dir
        self.cell_dir = run_dir / "cells" / cell.id
        self.log_path = self.cell_dir / "server.log"
        self.status = "error"
        self.phase = "launch"
        self.reason: str | None = None
        self.crash = None
        self.startup_s: float | None = None
        self.resolved: dict = {}
        self.teardown: TeardownRecord | None = None
        self.server: ServerProcess | None = None
        self.probes: ProbeSummary | None = None
        self.quality: list[TaskScore] = []
        self.throughput: list[ScenarioResult] = []
        self.distribution: dict[str, Any] | None = None
        self.requests: dict[str, RequestTally] = {}
        self.started_at = now_iso()
        self.begin = time.monotonic()
        self.clock = PhaseClock()  # wall time per phase (runner/phaseclock.py)

    def enter(self, name: str | None, progress: Progress | None = None) -> None:
        """Stop the running phase's clock and start `name`'s (None: stop only); tell the progress line."""
        self.clock.enter(name)
        if name and progress is not None:
            progress.phase(name)

    def result(self, engine: Engine) -> CellResult:
        log_text = _read_log(self.log_path)
        return CellResult(
            id=self.cell.id,
            axes=self.cell.axes,
            settings_hash=self.cell.settings_hash,
            args=mask_args(self.cell.args),
            env=mask_env(self.cell.env),
            argv=mask_argv(self.plan.argv),
            status=self.status,
            phase=self.phase,
            reason=self.reason,
            crash=self.crash,
            warnings=extract_warnings(log_text, engine.log_rules),
            startup_s=self.startup_s,
            resolved=self.resolved,
            probes=self.probes,
            quality=self.quality,
            throughput=self.throughput,
            distribution=self.distribution,
            requests=self.requests,
            log=str(self.log_path.relative_to(self.run_dir)) if self.log_path.exists() else None,
            teardown=self.teardown,
            phase_seconds=self.clock.times(self.quality),
            started_at=self.started_at,
            finished_at=now_iso(),
            duration_s=round(time.monotonic() - self.begin, 3),
        )


def _serve(matrix: Matrix, engine: Engine, state: CellRun, progress: Progress, reference_id: str) -> ServerProcess | None:
    """The phases of one cell, recording into `state`; returns the server so the caller can always tear it down."""
    plan = state.plan
    if engine.name == "external":
        state.enter("startup", progress)
        state.phase = "startup"
        ready, waited = wait_external(plan.root_url + plan.health_path, matrix.timeouts.startup_s)
        if not ready:
            state.status, state.reason = "timeout", f"{plan.base_url} did not answer within {waited:.0f}s"
            return None
        state.startup_s = round(waited, 2)
        server = None
    else:
        if matrix.port is not None:
            holder = port_in_use(matrix.host, matrix.port)
            if holder is not None:
                state.status = "error"
                state.reason = f"port {matrix.port} on {matrix.host} is not free ({holder}); nothing was launched"
                return None
        server = ServerProcess(plan.argv, plan.env, state.log_path, plan.root_url + plan.health_path,
                               pid_file=state.cell_dir / "server.pid")
        state.server = server
        state.enter("startup")  # the launch counts as startup
        try:
            server.start()
        except LaunchError as exc:
            state.status, state.reason = "crashed", str(exc)
            return None
        progress.phase("startup")
        state.phase = "startup"
        readiness = server.wait_ready(matrix.timeouts.startup_s)
        if readiness.outcome == "exited":
            crash = classify_crash(_read_log(state.log_path), engine.log_rules)
            state.status, state.crash = "crashed", crash
            state.reason = f"{crash.kind}: {crash.line} (exit code {readiness.returncode} after {readiness.seconds:.0f}s)"
            return server
        if readiness.outcome == "timeout":
            state.status = "timeout"
            state.reason = f"not ready after {readiness.seconds:.0f}s (startup timeout {matrix.timeouts.startup_s:.0f}s)"
            return server
        state.startup_s = round(readiness.seconds, 2)
    state.enter("resolve", progress)
    state.phase = "resolve"
    with httpx.Client(timeout=10.0) as client:
        state.resolved = engine.resolved_config(client, plan, _read_log(state.log_path))
    state.status = "ok"
    alive = (lambda: server.poll() is None) if server is not None else (lambda: True)
    if matrix.probes.enabled:
        _probe_phase(matrix, state, progress, reference_id, alive)
    if matrix.distribution.enabled:
        state.enter("distribution", progress)
        state.phase = "distribution"
        prompts = Path(matrix.distribution.prompts) if matrix.distribution.prompts else None
        state.distribution, tally = distribution.run_phase(
            plan.base_url, plan.served_model_name, state.cell_dir, state.run_dir / "cells" / reference_id,
            state.cell.id == reference_id, matrix.timeouts.request_s, prompts, matrix.distribution.max_tokens,
            retries=matrix.requests.retries, hung_after=matrix.requests.hung_after)
        if not alive():
            raise ServerDied("the server exited while scoring the reference's continuations")
        _judge_requests(matrix, state, "distribution", tally, alive)
    if state.status == "garbage" and not matrix.probes.run_costly_phases_on_garbage:
        state.phase = "probes"
        return server
    if matrix.quality is not None:
        _quality_phase(matrix, state, progress, alive)
    if matrix.throughput is not None:
        _throughput_phase(matrix, engine, state, progress, alive)
    if state.status == "ok":
        state.phase = "done"  # an error keeps the phase it happened in
    return server


def _throughput_phase(matrix: Matrix, engine: Engine, state: CellRun, progress: Progress, alive) -> None:
    assert matrix.throughput is not None
    state.phase = "throughput"
    plan = state.plan
    for scenario in matrix.throughput.scenarios:
        state.enter(f"throughput:{scenario.name}", progress)
        client = LoadClient(plan.base_url, plan.served_model_name, api=scenario.api,
                            timeout_s=matrix.timeouts.request_s, ignore_eos=scenario.ignore_eos,
                            tokenize_url=f"{plan.root_url}/tokenize", hung_after=matrix.requests.hung_after,
                            prompts=load_source(scenario.prompts))
        before: dict[str, float] = {}

        def read_counters() -> None:
            # after the warm-up: the engine's before/after delta (and SGLang's flush) covers the measured requests only
            with httpx.Client(timeout=10.0) as http:
                before.update(engine.before_load(http, plan))

        result = run_scenario(client, name=scenario.name, concurrency=scenario.concurrency,
                              request_rate=scenario.request_rate, input_len=scenario.input_len,
                              output_len=scenario.output_len, requests=scenario.requests,
                              duration_s=scenario.duration_s, warmup=scenario.warmup_requests,
                              after_warmup=read_counters, repeats=scenario.repeats,
                              processes=scenario.client_processes)
        state.throughput.append(result)
        if not alive():
            raise ServerDied(f"the server exited during throughput scenario {scenario.name}")
        with httpx.Client(timeout=10.0) as http:
            result.engine = engine.after_load(http, plan, before)
        failed = sum(result.errors.values())
        _judge_requests(matrix, state, f"throughput {scenario.name}", RequestTally(
            requests=result.requests, failed=failed, kinds=dict(result.errors), hung=client.hung), alive)


DYING_GRACE_S = 5.0  # an engine whose requests all fail is often on its way out: its exit takes a moment to show


def _judge_requests(matrix: Matrix, state: CellRun, phase: str, tally: RequestTally, alive) -> None:
    """Record a phase's requests; when too many failed, mark the cell and stop it (what it measured is kept). A
    server that exits within a few seconds of such a phase died in it: that is a crash, not request errors."""
    state.requests[phase] = tally
    verdict = judge_tally(phase, tally, matrix.requests.max_error_rate)
    if verdict is None:
        return
    deadline = time.monotonic() + DYING_GRACE_S
    while time.monotonic() < deadline:
        if not alive():
            raise ServerDied(f"the server exited during {phase}")
        time.sleep(0.2)
    state.status, state.reason = verdict
    raise _CellStopped(phase)


def _probe_phase(matrix: Matrix, state: CellRun, progress: Progress, reference_id: str, alive) -> None:
    state.enter("probes", progress)
    state.phase = "probes"
    probe_set = load_probes(Path(matrix.probes.prompts) if matrix.probes.prompts else DEFAULT_PROBES)
    begin = time.monotonic()
    outputs, tally = ask_all(state.plan.base_url, state.plan.served_model_name, probe_set, matrix.probes.max_tokens,
                             matrix.timeouts.request_s, matrix.probes.concurrency, retries=matrix.requests.retries,
                             hung_after=matrix.requests.hung_after)
    if not alive():
        raise ServerDied("the server exited during the probes")
    save_probe_outputs(state.cell_dir / "probes.jsonl", outputs)
    reference = {} if state.cell.id == reference_id else load_probe_outputs(
        state.run_dir / "cells" / reference_id / "probes.jsonl")
    summary = judge_outputs(outputs, probe_set, reference, matrix.probes.garbage_min_share,
                            matrix.probes.garbage_min_excess, time.monotonic() - begin)
    state.probes = summary
    _judge_requests(matrix, state, "probes", tally, alive)
    if summary.total == 0:
        raise RuntimeError(f"every probe request failed: {outputs[0].error}")
    if summary.garbage:
        state.status, state.reason = "garbage", summary.reason


def _quality_phase(matrix: Matrix, state: CellRun, progress: Progress, alive) -> None:
    quality = matrix.quality
    assert quality is not None
    state.enter("quality", progress)
    state.phase = "quality"
    run_quality(
        quality.tasks, state.plan.base_url, state.plan.served_model_name, state.cell_dir, state.run_dir, alive,
        include_path=quality.include_path or (str(SHIPPED_TASKS) if not quality.include_defaults else None),
        include_defaults=quality.include_defaults, api=quality.api, tokenizer=quality.tokenizer, concurrency=quality.concurrency,
        limit=quality.limit, request_timeout_s=matrix.timeouts.request_s, task_timeout_s=quality.task_timeout_s,
        retries=quality.retries, done=state.quality,
    )
    failed = [t.task for t in state.quality if t.error]
    if failed and state.status == "ok":
        if len(failed) == len(state.quality):
            state.status = "error"
        state.reason = f"quality tasks failed after retries: {', '.join(failed)}"


def run_cell(matrix: Matrix, cell: Cell, engine: Engine, run_dir: Path, progress: Progress,
             reference_id: str) -> CellResult:
    """Serve one cell and record what happened. Never raises for the cell's own failures; re-raises interrupts after
    tearing the server down."""
    port = 0 if engine.name == "external" else matrix.port or free_port(matrix.host)
    plan = engine.launch_plan(matrix, cell, port, str(run_dir.resolve()))
    state = CellRun(cell, plan, run_dir)
    state.cell_dir.mkdir(parents=True, exist_ok=True)
    mark(state.cell_dir, cell)  # which settings this folder's files belong to (runner/cellfolders.py)
    gpu_before = gpu_memory_used_mib() if engine.name != "external" else None
    try:
        _serve(matrix, engine, state, progress, reference_id)
    except (KeyboardInterrupt, Interrupted):
        raise
    except _CellStopped:
        pass  # the phase that stopped it set the status and the reason
    except Exception as exc:  # a bug or an unexpected answer inside one cell must not lose the others
        if state.server is not None and state.server.poll() is not None:
            # the engine died under us: that is a crash of this configuration, classified from its log
            crash = classify_crash(_read_log(state.log_path), engine.log_rules)
            state.status, state.crash = "crashed", crash
            state.reason = f"died during {state.phase}: {crash.kind}: {crash.line} (exit code {state.server.poll()})"
        else:
            state.status, state.reason = "error", f"{type(exc).__name__}: {exc} (in phase {state.phase})"
    finally:
        with INTERRUPT.deferred():
            state.enter("teardown" if state.server is not None else None, progress)
            if state.server is not None:
                torn = state.server.stop(matrix.timeouts.teardown_grace_s)
                state.teardown = torn.model_copy(update={"gpu_memory_before_mib": gpu_before,
                                                         "gpu_memory_after_mib": gpu_memory_released(gpu_before)})
                held = [a - b for a, b in zip(state.teardown.gpu_memory_after_mib or [], gpu_before or [])]
                if any(h > 1024 for h in held):
                    progress.message(f"[bold red]GPU memory not released after teardown: {held} MiB more per GPU[/]")
                if torn.leftover:
                    progress.message(f"[bold red]engine processes left behind after teardown: {torn.leftover}[/]")
                state.status, state.reason = after_teardown(state.status, state.reason, torn.leftover, held)
            state.enter(None)
    INTERRUPT.raise_pending()  # a signal that came during teardown: the cell is not finished, do not record it
    return state.result(engine)


def after_teardown(status: str, reason: str | None, leftover: list[int], held_mib: list[int],
                   slack_mib: int = 1024) -> tuple[str, str | None]:
    """A cell's status and reason once its server is torn down (pure). What teardown left (processes, GPU memory)
    is added to the reason; it never replaces a more specific verdict: a crashed, garbage or timed-out cell keeps its
    status, and only a cell that was ok becomes error, because its machine is no longer clean for the next cell."""
    found = []
    if any(h > slack_mib for h in held_mib):
        found.append(f"GPU memory not released after teardown: {held_mib} MiB more per GPU")
    if leftover:
        found.append(f"engine processes left behind after teardown: {leftover}")
        if status == "ok":
            status = "error"
    return status, "; ".join([*([reason] if reason else []), *found]) or None
