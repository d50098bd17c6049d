"""Batch dependence on the real embedded engine (issue 39, measures/batching/): a run of two cells on the session's
shared engine (engine external: both only read from it), the same configuration twice, with the phase on: each cell's
greedy answers alone and among 8 requests in flight are recorded, the reference's own rate is reported, and the engine
against itself is not flagged; a quality task's documents answered one at a time are paired with the same documents
among 8 in flight, and nothing is lost to batching. (What a cell that changes more looks like is
tests/unit/measures/test_batching.py's, from answers recorded on this engine in bfloat16: 8 of 16 changed where
float32 changed none.)"""

from __future__ import annotations

import json
import time

import pytest

from evalharness.measures.batching.spec import BatchChange, BatchDependence, LoadDrifts
from evalharness.measures.specs import read
from evalharness.records.io import load_run
from tests.integration.conftest import SERVED_NAME, run_harness

pytestmark = [pytest.mark.engine, pytest.mark.timeout(900)]

COUNT = 8


def test_the_phase_runs_in_each_cell_and_the_engine_against_itself_is_not_flagged(shared_engine, tmp_path):
    matrix = {
        "name": "batching", "engine": "external", "base_url": f"{shared_engine.root_url}/v1", "model": SERVED_NAME,
        "axes": {"cell": {"ref": None, "again": None}}, "reference": {"cell": "ref"},
        "probes": {"enabled": False}, "distribution": {"enabled": False},
        "batching": {"enabled": True, "count": COUNT, "max_tokens": 32, "concurrency": 8,
                     "tasks": ["eh_capitals"], "task_documents": 20},
        # the task at 8 requests in flight, its first 60 documents; 20 of them again one at a time
        "quality": {"tasks": ["eh_capitals"], "limit": 60, "subset": "first", "concurrency": 8, "full_quality": True},
    }
    (tmp_path / "matrix.yaml").write_text(json.dumps(matrix))  # JSON is YAML
    begin = time.monotonic()
    proc = run_harness("run", "--matrix", str(tmp_path / "matrix.yaml"), "--out", str(tmp_path / "out"), timeout=800)
    print(f"batching run: {time.monotonic() - begin:.0f}s")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run = load_run(tmp_path / "out")
    records = {cid: read(run.cells[cid].measures, "batching", BatchDependence) for cid in ("cell-ref", "cell-again")}
    for cid, record in records.items():
        cell = run.cells[cid]
        assert cell.status == "ok" and record is not None, (cid, cell.reason)
        assert len(record.answered()) == COUNT and all(a.alone and a.batched for a in record.answers)
        assert cell.requests["batching"].failed == 0
        print(f"{cid}: {record.differing()}/{COUNT} answers changed by batching, {record.seconds}s")
    change = read(run.cells["cell-again"].drift.measures, "batching", BatchChange)
    assert change is not None and change.prompts == COUNT and not change.flagged, change
    report = (tmp_path / "out" / "report.md").read_text()
    assert "## Batch dependence" in report and f"| `cell-ref` (reference) | {records['cell-ref'].differing()}/{COUNT}" in report
    # quality among 8 requests in flight against the same documents alone, in both cells: the float32 engine answers
    # them alike (what a cell that loses answers looks like is tests/unit/measures/test_batching.py's)
    load_drift = read(run.measures, "batching", LoadDrifts).load_drift
    assert {e.cell for e in load_drift} == {"cell-ref", "cell-again"}
    for entry in load_drift:
        alone = next(t for t in records[entry.cell].alone if t.task == "eh_capitals")
        assert alone.error is None and alone.n == 20, alone
        print(f"{entry.cell}: alone {entry.drift.reference}, at 8 {entry.drift.cell}, {entry.drift.outcome}")
        assert entry.drift.paired == 20 and entry.drift.outcome != "worse", entry.drift
    assert "at concurrency 8" in report
