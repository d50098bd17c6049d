"""One cell on the Ray node its task landed on: the same `run_cell` as a single-machine run, in a scratch run folder
of the node's own, against localhost; the cell's folder goes back to the driver in the return value.

The node is kept clean three ways. The task tears its server down itself, as a single-machine run does, also when
the driver cancels it (Ray raises the cancel as SIGINT in the task, which the run's signal handling turns into a
teardown). A guard process (runner/nodeguard.py), in a session of its own, outlives a worker that is killed outright
(its node lost, a forced cancel) and then kills the servers that the scratch folder's pid files name. And each task,
before it starts, sweeps the scratch folders whose worker is gone (a guard that was killed as well).

Imports Ray only inside the task, so the module loads on a machine without it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

import psutil

from evalharness import __version__
from evalharness.matrix.schema import Cell, Matrix
from evalharness.records.provenance import machine_info
from evalharness.records.run import CellResult
from evalharness.runner.cell import run_cell
from evalharness.runner.progress import Progress
from evalharness.runner.reverse import LOG_NAME, serve_and_score
from evalharness.runner.run import RunError, check_task_data, preflight
from evalharness.runner.signals import INTERRUPT
from evalharness.runner.transfer import pack, unpack
from evalharness.serving.engines import ENGINES
from evalharness.serving.processes import sweep_orphans

SCRATCH_ENV = "EVALHARNESS_RAY_SCRATCH"
OWNER = "owner.json"


def scratch_root() -> Path:
    return Path(os.environ.get(SCRATCH_ENV) or Path(tempfile.gettempdir()) / "evalharness-ray")


def owner_alive(folder: Path) -> bool:
    """Whether the worker that made this scratch folder still runs (pid and start time, since pids are reused)."""
    try:
        owner = json.loads((folder / OWNER).read_text())
        return abs(psutil.Process(int(owner["pid"])).create_time() - float(owner["create_time"])) < 1
    except (OSError, ValueError, KeyError, TypeError, psutil.Error):
        return False


def sweep_dead_scratch(root: Path) -> list[str]:
    """Kill the servers left in scratch folders whose worker is gone, and remove those folders; what was found."""
    found = []
    for folder in sorted(root.glob("*")) if root.is_dir() else []:
        if not folder.is_dir() or owner_alive(folder):
            continue
        found += sweep_orphans(sorted(folder.glob("run/cells/*/server.pid")))
        shutil.rmtree(folder, ignore_errors=True)
    return found


def node_facts() -> dict[str, Any]:
    """The machine this task runs on, as the run records it per cell: machine_info() and the Ray node's identity."""
    import ray

    context = ray.get_runtime_context()
    facts = machine_info()
    facts.update({"ray_node_id": context.get_node_id(), "ip": ray.util.get_node_ip_address(),
                  "accelerator_ids": {k: list(v) for k, v in context.get_accelerator_ids().items() if v},
                  "harness_version": __version__})
    return facts


def _start_guard(folder: Path) -> subprocess.Popen:
    me = psutil.Process()
    return subprocess.Popen([sys.executable, "-m", "evalharness.runner.nodeguard", str(me.pid), str(me.create_time()),
                             str(folder)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)


def _stop_guard(guard: subprocess.Popen) -> None:
    guard.send_signal(signal.SIGTERM)
    try:
        guard.wait(timeout=10)
    except subprocess.TimeoutExpired:
        guard.kill()
        guard.wait()


class PreflightFailed(Exception):
    """The node lacks the engine or the model: every cell would fail the same way there."""


def cell_task(matrix_data: dict, cell_data: dict, reference_id: str, position: tuple[int, int],
              reference_files: bytes, own_folder: bytes, reference_data: dict | None = None,
              family: int = 1) -> dict[str, Any]:
    """The body of a cell's Ray task (`position`: the cell's number and the run's count, for the progress lines that
    Ray forwards to the driver). Returns {"result": CellResult as JSON, "node": node facts, "folder": the
    cell's folder packed, "notes": what the node sweep found}, or {"preflight": reason, "node": ...}. An interrupt
    (the driver's cancel) tears the server down and is raised."""
    matrix, cell = Matrix.model_validate(matrix_data), Cell.model_validate(cell_data)
    engine = ENGINES[cell.engine]
    root, notes, facts = _on_node()
    try:
        preflight(matrix, engine, cell)
        check_task_data(matrix)
    except RunError as exc:
        return {"preflight": f"on node {facts['hostname']} ({facts['ip']}): {exc}", "node": facts, "notes": notes}
    with _scratch(root, cell.id) as folder:
        run_dir = folder / "run"
        unpack(reference_files, run_dir / "cells" / reference_id)
        unpack(own_folder, run_dir / "cells" / cell.id)
        begin = time.monotonic()
        progress = Progress(total=position[1])
        progress.cell(position[0], cell.id)
        with INTERRUPT.installed():
            # no GPU baseline: on a box shared by several Ray nodes, nvidia-smi shows the other nodes' cells too
            reference = CellResult.model_validate(reference_data) if reference_data else None
            result = run_cell(matrix, cell, engine, run_dir, progress, reference_id, None, reference, family)
        with INTERRUPT.deferred():
            result = result.model_copy(update={"node": facts})
            return {"result": result.model_dump(mode="json"), "node": facts, "notes": notes,
                    "folder": pack(run_dir / "cells" / cell.id), "seconds": round(time.monotonic() - begin, 3)}


def reverse_task(matrix_data: dict, reference_data: dict, own_samples: dict[str, bytes]) -> dict[str, Any]:
    """The numerics check's reverse direction on a node (runner/reverse.py): serve the reference, score each cell's
    shipped own samples, tear down. Returns {"scores": {cell id: its reverse_scored.jsonl packed}, "log": the
    reference's reverse-server.log packed, "note": the run's note, "node": node facts, "notes": sweep findings}."""
    matrix, reference = Matrix.model_validate(matrix_data), Cell.model_validate(reference_data)
    engine = ENGINES[reference.engine]
    root, notes, facts = _on_node()
    with _scratch(root, f"{reference.id}-reverse") as folder:
        run_dir = folder / "run"
        (run_dir / "cells" / reference.id).mkdir(parents=True)
        for cid, data in own_samples.items():
            unpack(data, run_dir / "cells" / cid)
        with INTERRUPT.installed():
            note = serve_and_score(matrix, engine, reference, run_dir, sorted(own_samples), Progress(total=1),
                                   gpu_baseline=False)
        return {"note": f"{note} (on {facts['hostname']})", "node": facts, "notes": notes,
                "scores": {cid: pack(run_dir / "cells" / cid, {"reverse_scored.jsonl"}) for cid in own_samples},
                "log": pack(run_dir / "cells" / reference.id, {LOG_NAME})}


def _on_node() -> tuple[Path, list[str], dict[str, Any]]:
    """What every task does first on its node: the scratch root (made), the sweep of dead workers' scratch folders
    (what it found, as notes) and the node's facts."""
    root = scratch_root()
    root.mkdir(parents=True, exist_ok=True)
    notes = [f"on {os.uname().nodename}: {found}" for found in sweep_dead_scratch(root)]
    return root, notes, node_facts()


@contextlib.contextmanager
def _scratch(root: Path, name: str) -> Iterator[Path]:
    """A scratch folder owned by this worker, with a node guard watching it; both gone afterwards."""
    folder = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=root))
    me = psutil.Process()
    (folder / OWNER).write_text(json.dumps({"pid": me.pid, "create_time": me.create_time(), "cell": name}))
    guard = _start_guard(folder)
    try:
        yield folder
    finally:
        _stop_guard(guard)
        shutil.rmtree(folder, ignore_errors=True)
