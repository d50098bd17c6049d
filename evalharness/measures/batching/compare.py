"""Batch dependence of a cell against the reference's own (issue 39): per prompt, whether its greedy answer changed
between alone and batched, paired across the two sides by prompt and judged by the changed-answers rule
(analysis/changed.py `changed_by_prompt`).

And across the run (`compare_run`): for every cell, the reference included, each of `batching.tasks` answered alone
(the record's `alone`) is paired per document with the cell's own answers at quality.concurrency (CellResult.quality),
by the drift's own test (analysis/evidence.py) and against the task's margin, the run's comparisons decided as one
family (Holm, as the drift's are). A defect of batched prefill or of batched decoding shows as a cell worse among its
concurrent requests than alone, which no comparison against a reference served the same way would see (a build
scored 63.59 on ifeval at concurrency 16 and 74.68 one request at a time: tenstorrent/tt-inference-server#4752).
Reads records only."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from evalharness.analysis.changed import changed_by_prompt
from evalharness.analysis.equivalence import DEFAULT_ALPHA, decide_family, margin_for
from evalharness.analysis.evidence import apply_decision, task_evidence
from evalharness.analysis.pairing import SideScores
from evalharness.analysis.stats import PairedEvidence
from evalharness.measures.batching.spec import KEY, BatchChange, BatchDependence, LoadDrift, LoadDrifts
from evalharness.measures.specs import read
from evalharness.records.run import RunResult


def compare(reference: BatchDependence, cell: BatchDependence, alpha: float) -> BatchChange | None:
    """The cell's changed-by-batching share against the reference's, over the prompts both answered both ways;
    None when none was."""
    paired = changed_by_prompt(reference.answered(), cell.answered(), alpha)
    if paired is None:
        return None
    ids, share_ref, share_cell, p_value, flagged = paired
    now = {a.id: a for a in cell.answered()}
    firsts = [now[pid].first_difference for pid in ids if now[pid].first_difference is not None]
    return BatchChange(prompts=len(ids), reference=share_ref, cell=share_cell, p_value=p_value, flagged=flagged,
                       concurrency=cell.concurrency,
                       mean_first_difference=sum(firsts) / len(firsts) if firsts else None)


def compare_run(run: RunResult, out_dir: Path, gate: Mapping[str, Any] | None) -> LoadDrifts | None:
    """Every cell's answers at its concurrency against alone, per task of batching.tasks, decided as one family;
    None when no cell answered a task alone."""
    concurrency = (run.meta.matrix.get("quality") or {}).get("concurrency")
    found: list[LoadDrift] = []
    family: dict[tuple[str, str], tuple[PairedEvidence, float]] = {}
    seen: dict[tuple, SideScores] = {}
    for cid in run.cell_order:
        cell = run.cells.get(cid)
        record = read(cell.measures, KEY, BatchDependence) if cell is not None else None
        if record is None:
            continue
        batched = {t.task: t for t in cell.quality}
        for alone in record.alone:
            if alone.task not in batched:
                continue
            drift, evidence = task_evidence(alone.task, alone, batched[alone.task], out_dir, read=seen)
            found.append(LoadDrift(cell=cid, concurrency=concurrency, drift=drift))
            if evidence is not None:
                family[(cid, alone.task)] = (evidence, margin_for(alone.task, gate))
    if not found:
        return None
    decisions = decide_family(family, float((gate or {}).get("alpha") or DEFAULT_ALPHA))
    for entry in found:
        key = (entry.cell, entry.drift.task)
        if key in decisions:
            apply_decision(entry.drift, decisions[key], family[key][1])
    return LoadDrifts(load_drift=found)
