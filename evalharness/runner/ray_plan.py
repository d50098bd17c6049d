"""Pure decisions of a Ray run (runner/ray_runner.py), apart so they are tested without a cluster: what one cell asks
Ray for, whether a node can ever run it, a lost task's reason in words, and which cells shared a node at once."""

from __future__ import annotations

from datetime import datetime
from itertools import combinations
from typing import Any

from evalharness.matrix.schema import Cell, ClusterSection
from evalharness.records.run import RunResult, parallel_gpus  # noqa: F401  (re-exported)

def cell_demand(cell: Cell, cluster: ClusterSection) -> dict[str, float]:
    """The Ray resources one cell's task asks for: GPUs (cluster.gpus_per_cell, else the cell's parallel sizes) and
    the custom resources of cluster.resources; GPU left out when it is 0."""
    gpus = cluster.gpus_per_cell if cluster.gpus_per_cell is not None else float(parallel_gpus(cell.args))
    demand = {"GPU": float(gpus)} if gpus else {}
    demand.update({k: float(v) for k, v in cluster.resources.items() if v})
    return demand


def fits(demand: dict[str, float], node_resources: dict[str, float]) -> bool:
    """Whether a node with these total resources could ever run the task."""
    return all(node_resources.get(k, 0.0) >= v for k, v in demand.items())


def lost_reason(exc: BaseException) -> str:
    """'NodeDiedError: Task failed because ... unavailable. Node IP: ..., node ID: ...': the exception's first
    two sentences (Ray's messages go on with advice), 300 characters at most."""
    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    return f"{type(exc).__name__}: {'. '.join(first.split('. ')[:2])[:300]}"


def _interval(started: str, finished: str) -> tuple[datetime, datetime]:
    return datetime.fromisoformat(started), datetime.fromisoformat(finished)


def overlap_notes(run: RunResult) -> list[str]:
    """Notes for finished cells that ran at the same time on one Ray node: their throughputs were measured beside each
    other (the cluster gave each cell its own GPUs, but the node's CPU, memory bandwidth and PCIe were shared)."""
    by_node: dict[str, list] = {}
    for cell in run.cells.values():
        node_id = (cell.node or {}).get("ray_node_id")
        if node_id:
            by_node.setdefault(node_id, []).append(cell)
    notes = []
    for node_id, cells in sorted(by_node.items()):
        for a, b in combinations(sorted(cells, key=lambda c: c.id), 2):
            (a0, a1), (b0, b1) = _interval(a.started_at, a.finished_at), _interval(b.started_at, b.finished_at)
            if a0 < b1 and b0 < a1:
                notes.append(f"Ran side by side on one node ({a.node.get('hostname')}, Ray node {node_id[:12]}): "
                             f"{a.id} and {b.id} overlapped in time, so their throughputs were measured beside each "
                             "other; give each cell a whole node (cluster.resources) to compare them")
    return notes
