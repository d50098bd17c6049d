"""Batch dependence of a cell against the reference's own (issue 39): per prompt, whether its greedy answer changed
between alone and batched, paired across the two sides by prompt and judged by the changed-answers rule
(analysis/changed.py `changed_by_prompt`). Reads records only."""

from __future__ import annotations

from evalharness.analysis.changed import changed_by_prompt
from evalharness.measures.batching.spec import BatchChange, BatchDependence


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
