"""The second stage on a Ray cluster (issue 61, 7): every confirmation launch, the reference's and the finalist's,
runs as a cell task (ray_cell.cell_task) pinned to the node that served the stage's first launch, so the machine
is not a difference between the sides. The stage itself is runner/confirmstage.py's; this module only serves one
launch on the cluster and brings its folder back. Imports the runner's Ray parts and records.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from evalharness.matrix.schema import Cell, Matrix
from evalharness.records.provenance import now_iso
from evalharness.records.run import CellResult
from evalharness.runner.confirmstage import Launch
from evalharness.runner.ray_cell import cell_task
from evalharness.runner.ray_plan import lost_reason
from evalharness.runner.signals import INTERRUPT, Interrupted
from evalharness.runner.transfer import pack, replace_folder

WAIT_S = 2.0  # how often a wait returns to act on a signal (as the cells' driver does)


def ray_launcher(ray: Any, reference: Cell, out_dir: Path, demands: dict[str, dict[str, float]],
                 error_result: Callable[..., CellResult], cancel: Callable[[Any], None]) -> Launch:
    """A Launch that serves each confirmation launch on the cluster, every one on the node of the first.
    `demands`: each exploration cell's Ray resources (a launch asks what its cell asked); `error_result(matrix, cell,
    out_dir, reason, started)`: a failed launch's record; `cancel(ref)`: an interrupted task's cancellation."""
    remote = ray.remote(cell_task)
    pinned: list[str] = []

    def launch(launch_matrix: Matrix, cell: Cell) -> CellResult:
        base = cell.id.split(".confirm-")[0]
        demand = demands.get(base, {})
        options: dict[str, Any] = dict(num_cpus=0, num_gpus=demand.get("GPU", 0),
                                       resources={k: v for k, v in demand.items() if k != "GPU"} or None,
                                       max_retries=0, retry_exceptions=False, name=f"evalharness:{cell.id}")
        if pinned:
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node_id=pinned[0], soft=False)
        started = now_iso()
        reference_files = pack(out_dir / "cells" / reference.id, {"probes.jsonl", "contexts.jsonl"}, {"samples.jsonl"})
        ref = remote.options(**options).remote(launch_matrix.model_dump(mode="json"), cell.model_dump(mode="json"),
                                               reference.id, (1, 1), reference_files, pack(out_dir / "cells" / cell.id))
        try:
            while not ray.wait([ref], num_returns=1, timeout=WAIT_S)[0]:
                if INTERRUPT.pending is not None:  # acted on between Ray calls, as the cells' driver does
                    signum, INTERRUPT.pending = INTERRUPT.pending, None
                    raise Interrupted(signum)
            payload = ray.get(ref)
        except (KeyboardInterrupt, Interrupted):
            cancel(ref)
            raise
        except ray.exceptions.RayError as exc:
            return error_result(launch_matrix, cell, out_dir, f"the launch's Ray task failed: {lost_reason(exc)}",
                                started)
        if "preflight" in payload:
            return error_result(launch_matrix, cell, out_dir, payload["preflight"], started)
        with INTERRUPT.deferred():
            replace_folder(payload["folder"], out_dir / "cells" / cell.id)
        if not pinned and payload.get("node", {}).get("ray_node_id"):
            pinned.append(payload["node"]["ray_node_id"])
        return CellResult.model_validate(payload["result"])

    return launch
