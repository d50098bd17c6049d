"""One cell, start to finish: launch, readiness, resolved configuration, the phases in order, teardown. The
measuring phases live in cellphases.py, the cell's state while it runs (and the CellResult it freezes into) in
cellstate.py.

A cell's failure is a result, never the run's end: whatever happens inside one cell is recorded on that cell. An
interrupt tears the server down first and is then raised to the run loop (run.py).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import httpx

from evalharness.matrix.schema import Cell, Matrix
from evalharness.measures.phases import PHASES, SKIPPED
from evalharness.phases.retries import ServerDied
from evalharness.phases.served import Served
from evalharness.records.run import CellResult
from evalharness.runner.cellfolders import mark
from evalharness.runner.cellphases import judge_requests, probe_phase, quality_phase, task_answerer, throughput_phase
from evalharness.runner.cellstate import CellRun, CellStopped, read_log
from evalharness.runner.lengthfiles import numerics_documents
from evalharness.runner.progress import Progress
from evalharness.runner.signals import INTERRUPT, Interrupted
from evalharness.runner.teardown import after_teardown, refuse_if_gpu_held, tear_down
from evalharness.serving.engines import Engine
from evalharness.serving.host import free_port, gpu_memory_held, gpu_memory_used_mib, port_in_use
from evalharness.serving.logscan import classify_crash
from evalharness.serving.server import LaunchError, ServerProcess, wait_external



def _serve(matrix: Matrix, engine: Engine, state: CellRun, progress: Progress, reference_id: str,
           reference: CellResult | None = None, family_size: int = 1) -> ServerProcess | None:
    """The phases of one cell, recording into `state`; returns the server so the caller can always tear it down."""
    plan = state.plan
    if not engine.launches:
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
        state.enter("startup")  # the launch counts as startup
        progress.phase("startup")
        state.phase = "startup"
        while True:
            server = ServerProcess(plan.argv, plan.env, state.log_path, plan.root_url + plan.health_path,
                                   pid_file=state.cell_dir / "server.pid")
            state.server = server
            try:
                server.start()
            except LaunchError as exc:
                state.status, state.reason = "crashed", str(exc)
                return None
            readiness = server.wait_ready(matrix.timeouts.startup_s)
            relaunch = _relaunch_if_port_lost(matrix, engine, state, server, readiness)
            if relaunch is None:
                break
            plan = relaunch
        if readiness.outcome == "exited":
            crash = classify_crash(read_log(state.log_path), engine.log_rules)
            state.status, state.crash = "crashed", crash
            state.reason = (f"{crash.kind}: {crash.line} (exit code {readiness.returncode} "
                            f"after {readiness.seconds:.0f}s)")
            return server
        if readiness.outcome == "timeout":
            state.status = "timeout"
            state.reason = (f"not ready after {readiness.seconds:.0f}s "
                            f"(startup timeout {matrix.timeouts.startup_s:.0f}s)")
            if readiness.foreign_listener is not None:  # a 200 came, but from a process that is not this server
                state.reason += (f"; port {urlsplit(plan.root_url).port} answered from pid "
                                 f"{readiness.foreign_listener}, a process this cell did not launch: never measured")
            return server
        state.startup_s = round(readiness.seconds, 2)
    state.enter("resolve", progress)
    state.phase = "resolve"
    with httpx.Client(timeout=10.0) as client:
        state.resolved = engine.resolved_config(client, plan, read_log(state.log_path))
        state.server_facts = engine.server_facts(client, plan, matrix)
    state.status = "ok"
    alive = (lambda: server.poll() is None) if server is not None else (lambda: True)
    if matrix.probes.enabled:
        probe_phase(matrix, state, progress, reference_id, alive)
    # a garbage cell's decision is made: the numerics check, throughput and quality would only be paid for a cell
    # that can never ship (on the demo without native bf16 the bad rope's numerics check alone took 123 of its 184 s)
    if state.status == "garbage" and not matrix.probes.run_costly_phases_on_garbage:
        state.phase = "probes"
        return server
    for spec, run_phase in PHASES:  # every measure's phase (evalharness/measures/phases.py), written once
        section = getattr(matrix, spec.key)
        if not section.enabled:
            continue
        answer_tasks = task_answerer(matrix, state, alive) if matrix.quality is not None else None
        given = served(plan, matrix, engine, state, reference_id, answer_tasks)
        nothing_to_ask = SKIPPED[spec.key](given, section) if spec.key in SKIPPED else None
        if nothing_to_ask is not None:  # said, not failed: no phase time, no requests
            state.measures[spec.key] = nothing_to_ask.model_dump(mode="json")
            continue
        state.enter(spec.key, progress)
        state.phase = spec.key
        record, tally = run_phase(given, section)
        state.measures[spec.key] = record.model_dump(mode="json")
        if not alive():
            raise ServerDied(f"the server exited during the {spec.title} check")
        judge_requests(matrix, state, spec.key, tally, alive)
    # throughput first: a cell not faster than the reference beyond the noise is screened out of most of the
    # quality phase, the costly one (analysis/sequential.py)
    if matrix.throughput is not None:
        throughput_phase(matrix, engine, state, progress, alive, reference, state.cell.id == reference_id)
    if matrix.quality is not None:
        quality_phase(matrix, state, progress, alive, reference_id, reference, family_size)
    if state.status == "ok":
        state.phase = "done"  # an error keeps the phase it happened in
    return server


def served(plan, matrix: Matrix, engine: Engine, state: CellRun, reference_id: str, answer_tasks=None) -> Served:
    """What a measure's phase is given of the served cell (phases/served.py)."""
    return Served(base_url=plan.base_url, root_url=plan.root_url, model=plan.served_model_name,
                  timeout_s=matrix.timeouts.request_s, retries=matrix.requests.retries,
                  hung_after=matrix.requests.hung_after, cell_dir=state.cell_dir, engine_label=engine.label,
                  cache_flush_path=engine.cache_flush_path,
                  include_path=matrix.quality.include_path if matrix.quality is not None else None,
                  answer_tasks=answer_tasks, reference_dir=state.run_dir / "cells" / reference_id,
                  is_reference=state.cell.id == reference_id, logprob_path=engine.logprob_path,
                  length_documents=lambda: numerics_documents(matrix, state.run_dir))


PORT_RELAUNCHES = 2  # launches a cell may lose to another process taking its port, each relaunched on a new one


def _relaunch_if_port_lost(matrix: Matrix, engine: Engine, state: CellRun, server: ServerProcess, readiness):
    """The plan for a relaunch on a new port when this launch lost its port (None: keep this launch's outcome).
    The port is chosen free before launch, but an engine binds it only once loaded (SGLang after weights and CUDA
    graphs, sglang/srt/entrypoints/http_server.py), tens of minutes on a large model: another process can take it
    meanwhile, and the cell would be lost at the end of its startup. A port the matrix fixed is never changed."""
    if matrix.port is not None or len(state.port_relaunches) >= PORT_RELAUNCHES or readiness.outcome != "exited":
        return None
    crash = classify_crash(read_log(state.log_path), engine.log_rules)
    if crash.kind != "port_in_use":
        return None
    torn = server.stop(grace_s=matrix.timeouts.teardown_grace_s, terminate=engine.terminate)
    if torn.leftover:
        return None  # processes left: the cell reports them rather than launching beside them
    lost = urlsplit(state.plan.root_url).port
    kept = state.log_path.with_name(f"server.port-lost-{len(state.port_relaunches) + 1}.log")
    state.log_path.replace(kept)
    port = free_port(matrix.host)
    state.plan = engine.launch_plan(matrix, state.cell, port, str(state.run_dir.resolve()))
    state.port_relaunches.append(f"port {lost} taken by another process after {readiness.seconds:.0f}s of startup "
                                 f"({crash.line[:160]}); relaunched on port {port}, that launch's log in {kept.name}")
    return state.plan


def run_cell(matrix: Matrix, cell: Cell, engine: Engine, run_dir: Path, progress: Progress,
             reference_id: str, gpu_baseline: list[int] | None = None, reference: CellResult | None = None,
             family_size: int = 1) -> CellResult:
    """Serve one cell and record what happened. Never raises for the cell's own failures; re-raises interrupts after
    tearing the server down. `gpu_baseline`: GPU memory per device before the run's first launch; a cell that would
    start while more is held (an earlier server's memory not yet released) is refused, not launched. `reference`:
    the reference's finished record, for screening and sequential looks (None: every look runs);
    `family_size`: the matrix's cell x task comparisons, over which a look's worse-test is adjusted."""
    port = 0 if not engine.launches else matrix.port or free_port(matrix.host)
    plan = engine.launch_plan(matrix, cell, port, str(run_dir.resolve()))
    state = CellRun(cell, plan, run_dir)
    state.cell_dir.mkdir(parents=True, exist_ok=True)
    mark(state.cell_dir, cell)  # which settings this folder's files belong to (runner/cellfolders.py)
    gpu_before = gpu_memory_used_mib() if engine.launches else None
    gpu_before, refused = refuse_if_gpu_held(gpu_before, gpu_baseline, matrix.timeouts.gpu_release_s)
    if refused is not None:
        state.status, state.reason = "error", refused
        return state.result(engine)
    try:
        _serve(matrix, engine, state, progress, reference_id, reference, family_size)
    except (KeyboardInterrupt, Interrupted):
        raise
    except CellStopped:
        pass  # the phase that stopped it set the status and the reason
    except Exception as exc:  # a bug or an unexpected answer inside one cell must not lose the others
        if state.server is not None and state.server.poll() is not None:
            # the engine died under us: that is a crash of this configuration, classified from its log
            crash = classify_crash(read_log(state.log_path), engine.log_rules)
            state.status, state.crash = "crashed", crash
            state.reason = f"died during {state.phase}: {crash.kind}: {crash.line} (exit code {state.server.poll()})"
        else:
            state.status, state.reason = "error", f"{type(exc).__name__}: {exc} (in phase {state.phase})"
    finally:
        with INTERRUPT.deferred():
            state.enter("teardown" if state.server is not None else None, progress)
            if state.server is not None:
                state.teardown = tear_down(state.server, engine.terminate, matrix.timeouts, gpu_before)
                held = gpu_memory_held(state.teardown.gpu_memory_after_mib, gpu_before)
                if held:
                    progress.message(f"[bold red]GPU memory not released after teardown: {held} MiB more per GPU[/]")
                if state.teardown.leftover:
                    progress.message(f"[bold red]engine processes left behind after teardown: "
                                     f"{state.teardown.leftover}[/]")
                state.status, state.reason = after_teardown(state.status, state.reason, state.teardown.leftover, held)
            state.enter(None)
    INTERRUPT.raise_pending()  # a signal that came during teardown: the cell is not finished, do not record it
    return state.result(engine)
