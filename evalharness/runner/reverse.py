"""The numerics check's last step (issue 26): the reference served once more, after the cells, to score every cell's
own samples by echo, which gives the reverse direction KL(cell || ref) (phases/distribution.py writes the samples,
analysis/numerics.py computes the figure). The reference cannot score them in its own turn, which comes first, and
keeping it running beside the cells would hold a second GPU's worth of memory.

Runs only for cells whose own samples have no reference scores yet, so `run --resume` finishes it and a finished
run does nothing. An external endpoint is not relaunched (nothing was launched): its reverse figure is unavailable.
A Ray run does the same on a node that has what the reference asks for (runner/ray_cell.py `reverse_task` calls
`serve_and_score` there, with the cells' own samples shipped out and their scores shipped back).
The reference's relaunch is recorded in the run's notes with its seconds; a failure to serve it is a note too,
never a failed cell: the forward direction stands without it.
"""

from __future__ import annotations

import time
from pathlib import Path

from evalharness.matrix.schema import Cell, Matrix
from evalharness.phases import distribution, logprobs
from evalharness.records.cellfiles import load_scored, save_scored
from evalharness.records.run import RunResult
from evalharness.runner.progress import Progress
from evalharness.runner.teardown import tear_down
from evalharness.serving.engines import Engine
from evalharness.serving.host import free_port, gpu_memory_used_mib
from evalharness.serving.server import LaunchError, ServerProcess

LOG_NAME = "reverse-server.log"


def cells_to_score(run: RunResult, out_dir: Path) -> list[str]:
    """Cells with usable own samples and no reference scores of them."""
    out = []
    for cid, cell in run.cells.items():
        folder = out_dir / "cells" / cid
        if cid == run.reference or cell.status not in ("ok", "garbage") or (folder / "reverse_scored.jsonl").exists():
            continue
        if any(not s.error and s.token_ids for s in load_scored(folder / "own_samples.jsonl")):
            out.append(cid)
    return out


def pending_reverse(matrix: Matrix, engine: Engine, reference: Cell, run: RunResult, out_dir: Path) -> list[str]:
    """The cells whose reverse direction is still to score: none when the check is off, the engine is external or
    the reference did not end ok."""
    if not matrix.distribution.enabled or not engine.launches:
        return []
    ref = run.cells.get(reference.id)
    if ref is None or ref.status != "ok":
        return []
    return cells_to_score(run, out_dir)


def reverse_pass(matrix: Matrix, engine: Engine, reference: Cell, run: RunResult, out_dir: Path,
                 progress: Progress) -> None:
    """On this machine: serve the reference, score what `pending_reverse` names, tear it down; a note either way."""
    todo = pending_reverse(matrix, engine, reference, run, out_dir)
    if todo:
        run.notes.append(serve_and_score(matrix, engine, reference, out_dir, todo, progress))


def serve_and_score(matrix: Matrix, engine: Engine, reference: Cell, out_dir: Path, todo: list[str],
                    progress: Progress, gpu_baseline: bool = True) -> str:
    """Serve the reference from `out_dir`'s run, write each `todo` cell's reverse_scored.jsonl from its
    own_samples.jsonl, tear the server down (always); the run's note on what happened (never raises for the
    server's sake: the forward direction stands without it). `gpu_baseline` False on a Ray node, where nvidia-smi
    shows the other nodes' cells too."""
    begin = time.monotonic()
    port = matrix.port or free_port(matrix.host)
    plan = engine.launch_plan(matrix, reference, port, str(out_dir.resolve()))
    ref_dir = out_dir / "cells" / reference.id
    progress.message(f"numerics check: serving the reference again to score {len(todo)} cells' own samples")
    server = ServerProcess(plan.argv, plan.env, ref_dir / LOG_NAME, plan.root_url + plan.health_path,
                           pid_file=ref_dir / "server.pid")
    gpu_before = gpu_memory_used_mib() if gpu_baseline else None
    try:
        server.start()
        readiness = server.wait_ready(matrix.timeouts.startup_s)
        if readiness.outcome != "ready":
            return (f"numerics check: the reference did not serve again ({readiness.outcome} after "
                    f"{readiness.seconds:.0f}s, see cells/{reference.id}/{LOG_NAME}): no reverse figures")
        path = logprobs.open_path(engine.logprob_path, plan.base_url, plan.root_url, plan.served_model_name,
                                  matrix.timeouts.request_s, matrix.requests.retries, matrix.requests.hung_after)
        try:
            for cid in todo:
                folder = out_dir / "cells" / cid
                scored = distribution.score_samples(path, load_scored(folder / "own_samples.jsonl"))
                # the cell's own record stays as the cell measured it: the count is in the drift's reverse figure
                save_scored(folder / "reverse_scored.jsonl", scored)
        finally:
            path.close()
        return (f"numerics check: the reference was served again for {time.monotonic() - begin:.0f}s "
                f"(startup {readiness.seconds:.0f}s) to score the own samples of {len(todo)} cells "
                "(the reverse direction); requests: " + path.tally.describe())
    except LaunchError as exc:
        return f"numerics check: the reference could not be launched again ({exc}): no reverse figures"
    finally:
        tear_down(server, engine.terminate, matrix.timeouts, gpu_before)
