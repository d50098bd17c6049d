"""A run of cells that recorded one measure, its drift computed as analysis/drift.py computes it (the measures'
comparisons against the first cell, the reference): what the measures' tests render and decide on."""

from __future__ import annotations

from pydantic import BaseModel

from evalharness.measures.comparisons import changes
from evalharness.records.drift import CellDrift
from evalharness.records.run import CellResult, RunMeta, RunResult


def run_of(key: str, records: dict[str, BaseModel | None]) -> RunResult:
    cells = {cid: CellResult(id=cid, axes={}, settings_hash="h", engine="vllm", args={}, env={}, argv=[], status="ok",
                             phase="done", measures={} if r is None else {key: r.model_dump(mode="json")},
                             started_at="t", finished_at="t", duration_s=1.0) for cid, r in records.items()}
    meta = RunMeta(harness_version="0", engine="vllm", matrix_name="m", matrix_path="m", started_at="t")
    reference = next(iter(records))
    run = RunResult(meta=meta, reference=reference, cell_order=list(records), cells=cells)
    for cid in list(records)[1:]:
        cells[cid].drift = CellDrift(cell=cid, measures=changes(cells[reference].measures, cells[cid].measures, 0.05))
    return run
