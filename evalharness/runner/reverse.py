"""The numerics check's last step (issue 26): the reference served once more, after the cells, to score every cell's
own samples by echo, which gives the reverse direction KL(cell || ref) (phases/distribution.py writes the samples,
analysis/numerics.py computes the figure). The reference cannot score them in its own turn, which comes first, and
keeping it running beside the cells would hold a second GPU's worth of memory.

Runs only for cells whose own samples have no reference scores yet, so `run --resume` finishes it and a finished
run does nothing. An external endpoint is not relaunched (nothing was launched): its reverse figure is unavailable.
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


def reverse_pass(matrix: Matrix, engine: Engine, reference: Cell, run: RunResult, out_dir: Path,
                 progress: Progress) -> None:
    """Serve the reference, score what `cells_to_score` names, tear it down (always)."""
    if not matrix.distribution.enabled or engine.name == "external":
        return
    ref = run.cells.get(reference.id)
    todo = cells_to_score(run, out_dir)
    if not todo or ref is None or ref.status != "ok":
        return
    begin = time.monotonic()
    port = matrix.port or free_port(matrix.host)
    plan = engine.launch_plan(matrix, reference, port, str(out_dir.resolve()))
    ref_dir = out_dir / "cells" / reference.id
    progress.message(f"numerics check: serving the reference again to score {len(todo)} cells' own samples")
    server = ServerProcess(plan.argv, plan.env, ref_dir / LOG_NAME, plan.root_url + plan.health_path,
                           pid_file=ref_dir / "server.pid")
    gpu_before = gpu_memory_used_mib()
    try:
        server.start()
        readiness = server.wait_ready(matrix.timeouts.startup_s)
        if readiness.outcome != "ready":
            run.notes.append(f"numerics check: the reference did not serve again ({readiness.outcome} after "
                             f"{readiness.seconds:.0f}s, see cells/{reference.id}/{LOG_NAME}): no reverse figures")
            return
        path = logprobs.open_path(engine.logprob_path, plan.base_url, plan.root_url, plan.served_model_name,
                                      matrix.timeouts.request_s, matrix.requests.retries, matrix.requests.hung_after)
        try:
            for cid in todo:
                folder = out_dir / "cells" / cid
                scored = distribution.score_samples(path, load_scored(folder / "own_samples.jsonl"))
                save_scored(folder / "reverse_scored.jsonl", scored)
                if run.cells[cid].distribution is not None:
                    run.cells[cid].distribution["reverse_scored"] = sum(1 for s in scored if not s.error)
        finally:
            path.close()
        run.notes.append(f"numerics check: the reference was served again for {time.monotonic() - begin:.0f}s "
                         f"(startup {readiness.seconds:.0f}s) to score the own samples of {len(todo)} cells "
                         "(the reverse direction); requests: " + path.tally.describe())
    except LaunchError as exc:
        run.notes.append(f"numerics check: the reference could not be launched again ({exc}): no reverse figures")
    finally:
        tear_down(server, engine.terminate, matrix.timeouts, gpu_before)
