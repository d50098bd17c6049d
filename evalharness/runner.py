"""The per-cell loop: launch, readiness, resolved configuration, teardown; isolation, resume, signals and saving.

A cell's failure is a result, never the run's end: whatever happens inside one cell is recorded on that cell and the
loop goes on. Results are saved (atomically) and the report re-rendered after every cell. Ctrl-C or SIGTERM tears the
current server down, saves the finished cells and ends the run with status 130/143; `--resume` finishes it later.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import httpx

from evalharness import __version__, distribution
from evalharness.compare import cell_drift
from evalharness.engines import ENGINES, Engine, LaunchPlan
from evalharness.load import LoadClient, ScenarioResult, run_scenario
from evalharness.logscan import classify_crash, extract_warnings
from evalharness.probes import DEFAULT_PROBES, ProbeError, ProbeSummary, ask_all, judge_outputs, load_probes, reference_outputs, save_outputs
from evalharness.progress import Progress
from evalharness.quality import SHIPPED_TASKS, ServerDied, TaskScore, run_quality
from evalharness.report import render_all
from evalharness.retries import RequestTally, judge_tally
from evalharness.results import (
    CellResult,
    ResultsError,
    RunMeta,
    RunResult,
    TeardownRecord,
    git_revision,
    harness_versions,
    load_run,
    machine_info,
    mask_args,
    mask_argv,
    mask_env,
    now_iso,
    save_run,
)
from evalharness.server import (
    LaunchError,
    ServerProcess,
    free_port,
    gpu_memory_released,
    gpu_memory_used_mib,
    port_in_use,
    sweep_orphans,
)
from evalharness.spec import Cell, Matrix



class Interrupted(Exception):
    """The harness received SIGINT, SIGTERM or SIGHUP."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class _CellStopped(Exception):
    """A phase judged the cell (status and reason already set): its remaining phases would measure nothing."""


class RunError(Exception):
    """The run cannot start (its output folder is unusable or holds another run) or cannot save what it measured."""


class _SaveFailed(Exception):
    pass


INTERRUPTS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class _Interrupts:
    """Turns SIGINT, SIGTERM and SIGHUP into Interrupted, except while deferred (teardown, the final save): then the
    signal is remembered and raised afterwards, so a second Ctrl-C cannot cut a teardown short and leave an engine
    behind. A flag, not a signal mask: Python runs handlers in the main thread whichever thread the kernel picked."""

    def __init__(self) -> None:
        self.deferring = 0
        self.pending: int | None = None

    def handler(self, signum: int, frame: object) -> None:
        if self.deferring:
            self.pending = self.pending or signum
            return
        raise Interrupted(signum)

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        # Installed explicitly for SIGINT too: a harness started in the background of a non-interactive shell (as in
        # CI) inherits SIGINT ignored, and Python then never raises KeyboardInterrupt.
        previous = {sig: signal.signal(sig, self.handler) for sig in INTERRUPTS}
        try:
            yield
        finally:
            for sig, old in previous.items():
                signal.signal(sig, old)

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        self.deferring += 1
        try:
            yield
        finally:
            self.deferring -= 1

    def raise_pending(self) -> None:
        if self.pending is not None and not self.deferring:
            signum, self.pending = self.pending, None
            raise Interrupted(signum)


INTERRUPT = _Interrupts()


def _read_log(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""


def _wait_external(plan: LaunchPlan, timeout_s: float) -> tuple[bool, float]:
    begin = time.monotonic()
    with httpx.Client(timeout=2.0) as client:
        while time.monotonic() - begin < timeout_s:
            try:
                if client.get(plan.root_url + plan.health_path).status_code == 200:
                    return True, time.monotonic() - begin
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
    return False, time.monotonic() - begin


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
            started_at=self.started_at,
            finished_at=now_iso(),
            duration_s=round(time.monotonic() - self.begin, 3),
        )


def _serve(matrix: Matrix, engine: Engine, state: CellRun, progress: Progress, reference_id: str) -> ServerProcess | None:
    """The phases of one cell, recording into `state`; returns the server so the caller can always tear it down."""
    plan = state.plan
    if engine.name == "external":
        progress.phase("startup")
        state.phase = "startup"
        ready, waited = _wait_external(plan, matrix.timeouts.startup_s)
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
    progress.phase("resolve")
    state.phase = "resolve"
    with httpx.Client(timeout=10.0) as client:
        state.resolved = engine.resolved_config(client, plan, _read_log(state.log_path))
    state.status = "ok"
    alive = (lambda: server.poll() is None) if server is not None else (lambda: True)
    if matrix.probes.enabled:
        _probe_phase(matrix, state, progress, reference_id, alive)
    if matrix.distribution.enabled:
        progress.phase("distribution")
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
        progress.phase(f"throughput {scenario.name}")
        client = LoadClient(plan.base_url, plan.served_model_name, api=scenario.api,
                            timeout_s=matrix.timeouts.request_s, ignore_eos=scenario.ignore_eos,
                            tokenize_url=f"{plan.root_url}/tokenize", hung_after=matrix.requests.hung_after)
        with httpx.Client(timeout=10.0) as http:
            before = engine.before_load(http, plan)
        result = run_scenario(client, name=scenario.name, concurrency=scenario.concurrency,
                              request_rate=scenario.request_rate, input_len=scenario.input_len,
                              output_len=scenario.output_len, requests=scenario.requests,
                              duration_s=scenario.duration_s, warmup=scenario.warmup_requests)
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
    progress.phase("probes")
    state.phase = "probes"
    probe_set = load_probes(Path(matrix.probes.prompts) if matrix.probes.prompts else DEFAULT_PROBES)
    begin = time.monotonic()
    outputs, tally = ask_all(state.plan.base_url, state.plan.served_model_name, probe_set, matrix.probes.max_tokens,
                             matrix.timeouts.request_s, matrix.probes.concurrency, retries=matrix.requests.retries,
                             hung_after=matrix.requests.hung_after)
    if not alive():
        raise ServerDied("the server exited during the probes")
    save_outputs(state.cell_dir / "probes.jsonl", outputs)
    reference = {} if state.cell.id == reference_id else reference_outputs(
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
    progress.phase("quality")
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
            if state.server is not None:
                progress.phase("teardown")
                torn = state.server.stop(matrix.timeouts.teardown_grace_s)
                state.teardown = TeardownRecord(**torn.__dict__, gpu_memory_before_mib=gpu_before,
                                                gpu_memory_after_mib=gpu_memory_released(gpu_before))
                held = [a - b for a, b in zip(state.teardown.gpu_memory_after_mib or [], gpu_before or [])]
                if any(h > 1024 for h in held):
                    progress.message(f"[bold red]GPU memory not released after teardown: {held} MiB more per GPU[/]")
                    state.reason = f"{state.reason + '; ' if state.reason else ''}GPU memory not released: {held} MiB"
                if torn.leftover:
                    progress.message(f"[bold red]engine processes left behind after teardown: {torn.leftover}[/]")
                    state.status = "error"
                    state.reason = f"{state.reason or state.status}; engine processes left behind: {torn.leftover}"
    INTERRUPT.raise_pending()  # a signal that came during teardown: the cell is not finished, do not record it
    return state.result(engine)


def preflight(matrix: Matrix, engine: Engine, cell: Cell) -> None:
    """What would make every cell fail the same way, found before any launch: a model folder or an engine binary
    that is not on this machine. (A hub id cannot be checked offline; the engine's own error classifies it.)"""
    if engine.name == "external":
        return
    model = matrix.model
    if model.startswith(("/", "~")) and not Path(model).expanduser().exists():
        raise RunError(f"model: {model} does not exist on this machine (a local model folder was given; a hub id "
                       "looks like org/name)")
    binary = engine.launch_plan(matrix, cell, 1, ".").argv[0]
    found = Path(binary).exists() if "/" in binary else shutil.which(binary) is not None
    if not found:
        raise RunError(f"command: the engine launcher {binary!r} is not "
                       f"{'there' if '/' in binary else 'on PATH'} (is the engine installed?)")


def prepare_run(matrix: Matrix, cells: list[Cell], reference: Cell, matrix_path: Path, out_dir: Path,
                resume: bool) -> RunResult:
    """A fresh run record, or the previous one when resuming (keeping only cells whose settings are unchanged)."""
    results_path = out_dir / "results.json"
    if results_path.exists() and not resume:
        raise RunError(f"{out_dir} already holds a run (results.json); pass --resume to finish it or choose another --out")
    versions = harness_versions()
    meta = RunMeta(
        harness_version=versions["harness"] or __version__,
        engine=matrix.engine,
        lm_eval_version=versions["lm_eval"],
        git_revision=git_revision(Path(__file__).resolve().parent),
        machine=machine_info(),
        matrix_name=matrix.name,
        matrix_path=str(matrix_path),
        matrix=_masked_matrix(matrix),
        started_at=now_iso(),
        command=mask_argv(sys.argv),
    )
    run = RunResult(meta=meta, reference=reference.id, cell_order=[c.id for c in cells])
    if resume and results_path.exists():
        try:
            previous = load_run(out_dir)
        except ResultsError as exc:
            raise RunError(f"cannot resume: {exc}") from None
        hashes = {c.id: c.settings_hash for c in cells}
        kept = {cid: r for cid, r in previous.cells.items() if hashes.get(cid) == r.settings_hash}
        dropped = sorted(set(previous.cells) - set(kept))
        run.cells = kept
        run.meta.started_at = previous.meta.started_at
        run.meta.engine_version = previous.meta.engine_version
        if dropped:
            run.notes.append(f"Resumed: re-running cells whose settings changed or left the matrix: {', '.join(dropped)}")
    return run


def _masked_matrix(matrix: Matrix) -> dict:
    data = matrix.model_dump(mode="json")
    data["env"] = mask_env(data.get("env", {}))
    data["args"] = mask_args(data.get("args", {}))
    for values in data.get("axes", {}).values():
        for settings in values.values():
            if settings:
                settings["env"] = mask_env(settings.get("env", {}))
                settings["args"] = mask_args(settings.get("args", {}))
    return data


def refresh_drift(run: RunResult, out_dir: Path, only: str | None = None) -> None:
    """Drift against the reference, from the saved per-sample files: of `only` (the cell just finished; the run loop
    runs the reference first) or of every finished cell (`report`, `gate`)."""
    if run.reference not in run.cells:
        return
    for cid, cell in run.cells.items():
        if only is not None and cid != only:
            continue
        if cell.status in ("ok", "garbage") and cid != run.reference:
            try:
                cell.drift = cell_drift(run, cid, out_dir)
            except (OSError, ValueError) as exc:  # a damaged sample file must not stop the run
                run.notes.append(f"drift of {cid} could not be computed: {exc}")


def write_outputs(run: RunResult, out_dir: Path) -> None:
    """results.json first (the record), then every renderer of it."""
    save_run(run, out_dir)
    render_all(run, out_dir)


def execute(matrix: Matrix, cells: list[Cell], reference: Cell, matrix_path: Path, out_dir: Path, resume: bool,
            progress: Progress | None = None) -> tuple[RunResult, int]:
    """Run every pending cell; return the run and the process exit status (0 done, 130/143 interrupted)."""
    preflight(matrix, ENGINES[matrix.engine], reference)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunError(f"cannot create the output folder {out_dir}: {exc.strerror or exc}") from None
    run = prepare_run(matrix, cells, reference, matrix_path, out_dir, resume)
    if matrix.probes.enabled:
        try:
            load_probes(Path(matrix.probes.prompts) if matrix.probes.prompts else DEFAULT_PROBES)
        except ProbeError as exc:
            raise RunError(str(exc)) from None
    for found in sweep_orphans(sorted(out_dir.glob("cells/*/server.pid"))):
        run.notes.append(f"On {'resume' if resume else 'start'}: {found}")
    try:
        write_outputs(run, out_dir)
    except OSError as exc:
        raise RunError(f"cannot write the results in {out_dir}: {exc.strerror or exc}") from None
    engine = ENGINES[matrix.engine]
    # the reference runs first: every other cell's probes (and later, drift) are judged against it
    pending = sorted((c for c in cells if c.id not in run.cells), key=lambda c: c.id != reference.id)
    progress = progress or Progress(total=len(cells))
    for note in run.notes:
        progress.message(note)
    done_before = len(cells) - len(pending)
    exit_status = 0
    saved = len(run.cells)
    save_error: str | None = None

    def save() -> None:
        nonlocal saved, save_error
        try:
            save_run(run, out_dir)
            saved = len(run.cells)
            render_all(run, out_dir)
        except OSError as exc:  # disk full, folder gone or read-only: stop, and say what the folder still holds
            save_error = (f"cannot save the results in {out_dir}: {exc.strerror or exc}; results.json still holds "
                          f"the last good save ({saved} finished cells, not marked complete); free the space and "
                          "run again with --resume")
            raise _SaveFailed from exc

    with INTERRUPT.installed():
        try:
            for offset, cell in enumerate(pending):
                progress.cell(done_before + offset + 1, cell.id)
                result = run_cell(matrix, cell, engine, out_dir, progress, reference.id)
                with INTERRUPT.deferred():
                    run.cells[cell.id] = result
                    # a reference re-run on resume makes every other cell's drift stale
                    refresh_drift(run, out_dir, only=None if cell.id == reference.id else cell.id)
                    if result.status == "ok" and result.resolved.get("version") and not run.meta.engine_version:
                        run.meta.engine_version = str(result.resolved["version"])
                    save()
                    progress.finished(cell.id, result.status, result.reason or "")
                INTERRUPT.raise_pending()
            run.complete = True
        except _SaveFailed:
            pass
        except (KeyboardInterrupt, Interrupted) as exc:
            with INTERRUPT.deferred():  # from here to the exit nothing may interrupt the save
                run.interrupted = True
                exit_status = 128 + (exc.signum if isinstance(exc, Interrupted) else signal.SIGINT)
                progress.message(f"interrupted ({exc or 'SIGINT'}): saved {len(run.cells)} finished cells; "
                                 "--resume finishes the run")
        finally:
            with INTERRUPT.deferred():
                if save_error is None:
                    with contextlib.suppress(_SaveFailed):
                        save()
                progress.close()
    if save_error is not None:
        raise RunError(save_error)
    return run, exit_status
