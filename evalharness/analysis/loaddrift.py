"""Quality at the operating concurrency against the same documents answered one request at a time (issue 39): for
every cell, the reference included, each of `batching.tasks` answered alone (CellResult.quality_alone) is paired per
document with the cell's own answers at quality.concurrency (CellResult.quality), by the drift's own test
(analysis/evidence.py) and against the task's margin, and the run's comparisons are decided as one family (Holm, as
the drift's are). A defect of batched prefill or of batched decoding shows as a cell worse among its concurrent
requests than alone, which no comparison against a reference served the same way would see (a build scored 63.59 on
ifeval at concurrency 16 and 74.68 one request at a time: tenstorrent/tt-inference-server#4752). Reads records only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from evalharness.analysis.equivalence import DEFAULT_ALPHA, decide_family, margin_for
from evalharness.analysis.evidence import apply_decision, task_evidence
from evalharness.analysis.pairing import SideScores
from evalharness.analysis.stats import PairedEvidence
from evalharness.records.drift import LoadDrift
from evalharness.records.run import RunResult


def load_drift(run: RunResult, out_dir: Path, gate: Mapping[str, Any] | None) -> list[LoadDrift]:
    """Every cell's answers at its concurrency against alone, per task of batching.tasks, decided as one family."""
    concurrency = (run.meta.matrix.get("quality") or {}).get("concurrency")
    found: list[LoadDrift] = []
    family: dict[tuple[str, str], tuple[PairedEvidence, float]] = {}
    read: dict[tuple, SideScores] = {}
    for cid in run.cell_order:
        cell = run.cells.get(cid)
        if cell is None:
            continue
        batched = {t.task: t for t in cell.quality}
        for alone in cell.quality_alone:
            if alone.task not in batched:
                continue
            drift, evidence = task_evidence(alone.task, alone, batched[alone.task], out_dir, read=read)
            found.append(LoadDrift(cell=cid, concurrency=concurrency, drift=drift))
            if evidence is not None:
                family[(cid, alone.task)] = (evidence, margin_for(alone.task, gate))
    decisions = decide_family(family, float((gate or {}).get("alpha") or DEFAULT_ALPHA))
    for entry in found:
        key = (entry.cell, entry.drift.task)
        if key in decisions:
            apply_decision(entry.drift, decisions[key], family[key][1])
    return found
