"""A run on a Ray cluster (`run --ray [ADDRESS]`, or a matrix's `cluster:` section): the same record, folder and
reports as a single-machine run (runner/run.py), the cells spread over the cluster's nodes.

The reference runs first, alone: every other cell is judged against its probe answers and continuations. Then every
other cell is a Ray task asking for what one cell needs (`cluster.gpus_per_cell`, default its parallel sizes; plus
`cluster.resources`), so Ray never gives two cells one GPU; each runs where it lands (runner/ray_cell.py) and sends
its folder back in its return value. This process alone writes results.json and the reports, after every cell.
When every cell is in, the numerics check's reverse direction is one more task on a node that has what the reference
asks for: the reference served again to score the cells' own samples (runner/reverse.py), as a local run does.
Then, with a `confirm` section, the second stage (runner/confirmstage.py), every launch a cell task pinned to the node
of its first (runner/ray_confirm.py).

Faults: a cell whose node or worker is lost mid-cell is submitted again, up to `cluster.max_retries` times, with a
note; then it is recorded as `error` with the reason. Ctrl-C or SIGTERM cancels every task (each tears its server
down, runner/ray_cell.py), waits for them a bounded time, force-cancels what is left, saves and exits 130/143;
`--resume`, with Ray or without, finishes the run. Ray is imported here (and by ray_confirm.py) only, and only when a
run asks for it.
"""

from __future__ import annotations

import contextlib
import signal
import time
from pathlib import Path
from typing import Any

from evalharness.analysis.drift import refresh_drift
from evalharness.matrix.schema import Cell, ClusterSection, Matrix
from evalharness.records.io import save_run
from evalharness.records.masking import mask_args, mask_argv, mask_env
from evalharness.records.provenance import now_iso
from evalharness.records.run import CellResult, RunResult
from evalharness.render.outputs import render_all
from evalharness.runner.confirmstage import run_confirmation
from evalharness.runner.progress import Progress
from evalharness.runner.ray_cell import cell_task, reverse_task
from evalharness.runner.ray_confirm import ray_launcher
from evalharness.runner.ray_plan import cell_demand, fits, lost_reason, overlap_notes
from evalharness.runner.reverse import pending_reverse
from evalharness.runner.run import RunError, family_size, open_run
from evalharness.runner.signals import INTERRUPT, Interrupted
from evalharness.runner.transfer import pack, replace_folder, unpack
from evalharness.serving.engines import ENGINES

WAIT_S = 1.0  # how often the driver looks at its tasks (and at signals)
NO_NODE_CHECKS = 30  # a pending cell that no alive node can run for this many looks in a row (~30 s) is an error
CANCEL_MARGIN_S = 60.0  # after a cancel: beyond the teardown grace and the GPU release wait, before forcing


def connect(address: str) -> Any:
    import ray

    try:
        ray.init(address=address, log_to_driver=True, logging_level="WARNING", namespace="evalharness",
                 configure_logging=True)
    except Exception as exc:  # ConnectionError, RuntimeError: Ray's own words say what is wrong
        hint = ("start one with `ray start --head` (docs/engines.md: 'On a Ray cluster') or pass --ray HOST:PORT"
                if address == "auto" else "is `ray start --head` running there, and is the port reachable?")
        raise RunError(f"cannot connect to the Ray cluster at {address!r}: "
                       f"{str(exc).splitlines()[0]}; {hint}") from None
    return ray


def _nodes(ray: Any) -> list[dict[str, float]]:
    return [dict(n.get("Resources") or {}) for n in ray.nodes() if n.get("Alive")]


def _error_result(matrix: Matrix, cell: Cell, out_dir: Path, reason: str, started: str, node: dict | None = None,
                  phase: str = "ray") -> CellResult:
    plan = ENGINES[cell.engine].launch_plan(matrix, cell, 0, str(out_dir.resolve()))
    return CellResult(id=cell.id, axes=cell.axes, settings_hash=cell.settings_hash, engine=cell.engine,
                      args=mask_args(cell.args),
                      env=mask_env(cell.env), argv=mask_argv(plan.argv), status="error", phase=phase, reason=reason,
                      node=node, started_at=started, finished_at=now_iso(), duration_s=0.0)


class _Task:
    def __init__(self, cell: Cell, ref: Any, attempt: int):
        self.cell, self.ref, self.attempt = cell, ref, attempt
        self.submitted = now_iso()
        self.no_node = 0


def execute_ray(matrix: Matrix, cells: list[Cell], reference: Cell, matrix_path: Path, out_dir: Path, resume: bool,
                address: str | None = None, progress: Progress | None = None) -> tuple[RunResult, int]:
    """Run every pending cell on the Ray cluster; return the run and the exit status (0 done, 130/143 interrupted)."""
    cluster = matrix.cluster or ClusterSection()
    address = address or cluster.ray
    if not ENGINES[reference.engine].launches:
        raise RunError(f"engine {reference.engine!r} serves from one endpoint that is already up: there is nothing "
                       "to spread over a Ray cluster; run it without --ray")
    demands = {c.id: cell_demand(c, cluster) for c in cells}
    for cid, demand in demands.items():
        if not demand:  # a task asking for nothing runs anywhere, any number at once: never what a cell wants
            raise RunError(f"cell {cid} would ask Ray for nothing (cluster.gpus_per_cell 0 and no cluster.resources): "
                           "give each node a resource such as --resources '{\"eh_node\": 1}' and ask for it in "
                           "cluster.resources")
    ray = connect(address)  # before the folder is touched: a cluster that is not there leaves nothing to resume
    try:
        run = open_run(matrix, cells, reference, matrix_path, out_dir, resume)
        nodes = _nodes(ray)
        for cid, demand in demands.items():
            if cid not in run.cells and not any(fits(demand, n) for n in nodes):
                raise RunError(f"no node of the Ray cluster at {address} has what cell {cid} asks for ({demand}); "
                               f"its nodes: {nodes}. Start nodes with --num-gpus/--resources, or change "
                               "cluster.gpus_per_cell/resources")
        run.meta.cluster = {"address": address, "ray_version": ray.__version__, "nodes_at_start": len(nodes),
                            "max_retries": cluster.max_retries, "demands": demands}
        return _drive(ray, matrix, cells, reference, out_dir, run, demands, cluster.max_retries,
                      progress or Progress(total=len(cells)))
    finally:
        with contextlib.suppress(Exception):
            ray.shutdown()


def _drive(ray: Any, matrix: Matrix, cells: list[Cell], reference: Cell, out_dir: Path, run: RunResult,
           demands: dict[str, dict[str, float]], max_retries: int, progress: Progress) -> tuple[RunResult, int]:
    remote = ray.remote(cell_task)
    matrix_data = matrix.model_dump(mode="json")
    pending = [c for c in sorted(cells, key=lambda c: c.id != reference.id) if c.id not in run.cells]
    number = {c.id: i + 1 for i, c in enumerate(cells)}
    tasks: dict[Any, _Task] = {}
    ref_files: list[Any] = []
    stopping: list[bool] = []  # set once the run is interrupted: a task lost now is not submitted again
    exit_status = 0

    def submit(cell: Cell, attempt: int) -> None:
        demand = demands[cell.id]
        if not ref_files:
            # the reference's probes and sampled contexts, and its samples: the cells' looks judge against them
            ref_files.append(ray.put(pack(out_dir / "cells" / reference.id, {"probes.jsonl", "contexts.jsonl"},
                                          {"samples.jsonl"})))
        ref = remote.options(num_cpus=0, num_gpus=demand.get("GPU", 0),
                             resources={k: v for k, v in demand.items() if k != "GPU"} or None,
                             max_retries=0, retry_exceptions=False, name=f"evalharness:{cell.id}").remote(
            matrix_data, cell.model_dump(mode="json"), reference.id, (number[cell.id], len(cells)), ref_files[0],
            pack(out_dir / "cells" / cell.id),
            run.cells[reference.id].model_dump(mode="json") if cell.id != reference.id and reference.id in run.cells
            else None, family_size(matrix, cells))
        tasks[ref] = _Task(cell, ref, attempt)

    def record(cell: Cell, result: CellResult, folder: bytes | None) -> None:
        with INTERRUPT.deferred():
            if folder:
                replace_folder(folder, out_dir / "cells" / cell.id)
            run.cells[cell.id] = result
            if cell.id == reference.id:
                ref_files.clear()  # packed again, from the reference's folder as it came back, for the next cells
            refresh_drift(run, out_dir, only=None if cell.id == reference.id else cell.id)
            if result.status == "ok" and not run.meta.engine_version:
                run.meta.engine_version = result.engine_version(run.meta.engine)
            run.notes[:] = [n for n in run.notes if not n.startswith("Ran side by side")] + overlap_notes(run)
            _save(run, out_dir)
            where = f" on {result.node.get('hostname')} ({result.node.get('ip')})" if result.node else ""
            progress.message(f"[{len(run.cells)}/{len(cells)}] {cell.id}: {result.status} in {result.duration_s:.0f}s"
                             f"{where}{'  ' + result.reason if result.reason else ''}")
        INTERRUPT.raise_pending()

    def settle(task: _Task) -> None:
        """A finished task: its cell recorded, or submitted again after a lost node."""
        try:
            payload = ray.get(task.ref)
        except ray.exceptions.TaskCancelledError:
            return
        except ray.exceptions.RayTaskError as exc:  # raised inside the task
            cause = exc.cause if isinstance(getattr(exc, "cause", None), BaseException) else None
            if isinstance(cause, (Interrupted, KeyboardInterrupt)):  # its worker was told to stop (ray stop, SIGTERM)
                lost(task, f"its worker was stopped ({type(cause).__name__}: {cause})")
            elif isinstance(cause, ImportError):  # the node's Python lacks the harness: a set-up error, not the cell's
                raise RunError(f"a Ray worker cannot import the harness ({cause}): install evalharness, the same "
                               "version as here, in the Python that runs `ray start` on every node") from None
            else:
                record(task.cell, _error_result(matrix, task.cell, out_dir, f"the cell's Ray task failed: "
                                                f"{str(exc).strip().splitlines()[-1]}", task.submitted), None)
            return
        except ray.exceptions.RayError as exc:  # NodeDiedError, WorkerCrashedError, ...: the machine went away
            lost(task, lost_reason(exc))
            return
        for note in payload.get("notes", []):
            run.notes.append(f"Node sweep {note}")
        if "preflight" in payload:
            raise RunError(payload["preflight"])
        record(task.cell, CellResult.model_validate(payload["result"]), payload.get("folder"))

    def lost(task: _Task, reason: str) -> None:
        if stopping:
            return
        if task.attempt <= max_retries:
            run.notes.append(f"{task.cell.id}: attempt {task.attempt} lost: {reason}; submitted again "
                             f"(attempt {task.attempt + 1} of {max_retries + 1})")
            progress.message(run.notes[-1])
            submit(task.cell, task.attempt + 1)
        else:
            record(task.cell, _error_result(
                matrix, task.cell, out_dir, f"lost its node or worker {task.attempt} time(s) (cluster.max_retries "
                f"{max_retries}); last: {reason}", task.submitted), None)

    def step() -> None:
        _step(ray, tasks, settle, demands, matrix, out_dir, record)
        if INTERRUPT.pending is not None:  # a signal that came during the step: acted on here, between Ray calls
            signum, INTERRUPT.pending = INTERRUPT.pending, None
            raise Interrupted(signum)

    # Signals are only remembered while Ray's calls run (an exception raised from a handler inside ray.wait leaves
    # Ray's C code with "a result with an exception set"), and acted on between them, within WAIT_S.
    with INTERRUPT.installed(), INTERRUPT.deferred():
        try:
            for cell in pending:
                submit(cell, 1)
                if cell.id == reference.id:  # the others are judged against it: it runs alone, first
                    while tasks:
                        step()
            while tasks:
                step()
            if len(run.cells) == len(cells):  # the numerics check's reverse direction (runner/reverse.py)
                _reverse_on_a_node(ray, matrix, reference, run, out_dir, demands[reference.id], progress)
            if matrix.confirm is not None and matrix.confirm.enabled and len(run.cells) == len(cells):
                launch = ray_launcher(ray, reference, out_dir, demands, _error_result,
                                      lambda ref: _cancel_all(ray, {ref: None}, matrix, lambda task: None))
                run_confirmation(matrix, run, reference, {c.id: c for c in cells}, out_dir, progress,
                                 lambda: _save(run, out_dir), None, launch)
            run.complete = len(run.cells) == len(cells)
        except (KeyboardInterrupt, Interrupted) as exc:
            with INTERRUPT.deferred():
                stopping.append(True)
                run.interrupted = True
                exit_status = 128 + (exc.signum if isinstance(exc, Interrupted) else signal.SIGINT)
                progress.message(f"interrupted ({exc or 'SIGINT'}): cancelling {len(tasks)} Ray task(s); each "
                                 "tears its server down")
                _cancel_all(ray, tasks, matrix, settle)
                progress.message(f"saved {len(run.cells)} finished cells; --resume finishes the run")
        except OSError as exc:  # disk full, folder gone or read-only: stop, and say what the folder still holds
            raise RunError(f"cannot save the results in {out_dir}: {exc.strerror or exc}; results.json holds the "
                           "last good save; free the space and run again with --resume") from None
        finally:
            with INTERRUPT.deferred():
                if tasks:  # an error on the way out (a failed save, a preflight): no task may outlive the driver
                    stopping.append(True)
                    _cancel_all(ray, tasks, matrix, lambda task: None)
                with contextlib.suppress(OSError):
                    _save(run, out_dir)
                progress.close()
    return run, exit_status


def _reverse_on_a_node(ray: Any, matrix: Matrix, reference: Cell, run: RunResult, out_dir: Path,
                       demand: dict[str, float], progress: Progress) -> None:
    """The reference served once more on a node that has what it asks for, to score the cells' own samples there
    (ray_cell.reverse_task); the scores and the server's log come back into the run folder. A task that fails is a
    note, never a failed cell (`--resume` tries again); an interrupt cancels it as it cancels a cell."""
    todo = pending_reverse(matrix, ENGINES[reference.engine], reference, run, out_dir)
    if not todo:
        return
    samples = {cid: pack(out_dir / "cells" / cid, {"own_samples.jsonl"}) for cid in todo}
    progress.message(f"numerics check: serving the reference again on a node to score {len(todo)} cells' own samples")
    ref = ray.remote(reverse_task).options(
        num_cpus=0, num_gpus=demand.get("GPU", 0), resources={k: v for k, v in demand.items() if k != "GPU"} or None,
        max_retries=0, retry_exceptions=False, name=f"evalharness:{reference.id}:reverse").remote(
        matrix.model_dump(mode="json"), reference.model_dump(mode="json"), samples)
    try:
        while not ray.wait([ref], num_returns=1, timeout=WAIT_S)[0]:
            if INTERRUPT.pending is not None:  # acted on between Ray calls, as in _drive
                signum, INTERRUPT.pending = INTERRUPT.pending, None
                raise Interrupted(signum)
        payload = ray.get(ref)
    except (KeyboardInterrupt, Interrupted):
        _cancel_all(ray, {ref: None}, matrix, lambda task: None)
        raise
    except ray.exceptions.RayError as exc:
        run.notes.append(f"numerics check: the reference's Ray task to score the cells' own samples failed "
                         f"({lost_reason(exc)}): no reverse figures; --resume tries again")
        return
    with INTERRUPT.deferred():
        for cid, data in payload["scores"].items():
            unpack(data, out_dir / "cells" / cid)
        unpack(payload["log"], out_dir / "cells" / reference.id)
        run.notes.extend(f"Node sweep {note}" for note in payload.get("notes", []))
        run.notes.append(payload["note"])
        refresh_drift(run, out_dir)
        _save(run, out_dir)


def _step(ray: Any, tasks: dict[Any, "_Task"], settle, demands, matrix: Matrix, out_dir: Path, record) -> None:
    done, _ = ray.wait(list(tasks), num_returns=1, timeout=WAIT_S)
    for ref in done:
        settle(tasks.pop(ref))
    if done:
        return
    nodes = _nodes(ray)
    for ref, task in list(tasks.items()):
        task.no_node = 0 if any(fits(demands[task.cell.id], n) for n in nodes) else task.no_node + 1
        if task.no_node >= NO_NODE_CHECKS:
            ray.cancel(ref, force=True)
            tasks.pop(ref)
            record(task.cell, _error_result(matrix, task.cell, out_dir, "no node of the Ray cluster left that has "
                                            f"what it asks for ({demands[task.cell.id]})", task.submitted), None)


def _cancel_all(ray: Any, tasks: dict[Any, "_Task"], matrix: Matrix, settle) -> None:
    """Cancel every task the way Ctrl-C stops a single-machine run (each tears its server down), wait a bounded
    time for them, then force what is left (its node's guard kills a server that a killed worker leaves)."""
    for ref in tasks:
        with contextlib.suppress(Exception):
            ray.cancel(ref, force=False)
    deadline = time.monotonic() + matrix.timeouts.teardown_grace_s + matrix.timeouts.gpu_release_s + CANCEL_MARGIN_S
    while tasks and time.monotonic() < deadline:
        done, _ = ray.wait(list(tasks), num_returns=len(tasks), timeout=WAIT_S)
        for ref in done:
            task = tasks.pop(ref)
            with contextlib.suppress(Exception):
                settle(task)  # a cell that finished just before the cancel is kept
    for ref in list(tasks):
        with contextlib.suppress(Exception):
            ray.cancel(ref, force=True)
        tasks.pop(ref)


def _save(run: RunResult, out_dir: Path) -> None:
    save_run(run, out_dir)
    render_all(run, out_dir, engines=ENGINES)
