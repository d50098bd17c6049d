"""Batch dependence of a cell against the reference's own (issue 39): per prompt, whether its greedy answer changed
between alone and batched, paired across the two sides by prompt; the cell is flagged when its share of changed
answers is credibly above the reference's: the paired test of analysis/stats.py at alpha AND a material difference
(analysis/secondary.py's MATERIAL_SHARE), the rule every secondary figure is judged by, here one figure per cell.
`changed_more` is that rule on its own, for every check that pairs changed-or-not answers per prompt against the
reference's (the prefix-cache check, measures/prefix_cache/compare.py, too); benchmarks/batching_flag.py measures it.

Reads records only (CellResult.batching)."""

from __future__ import annotations

from evalharness.analysis.secondary import MATERIAL_SHARE
from evalharness.analysis.stats import paired_evidence
from evalharness.records.drift import BatchChange
from evalharness.records.measures import BatchDependence


def batch_change(reference: BatchDependence, cell: BatchDependence, alpha: float) -> BatchChange | None:
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


def changed_more(reference: list[bool], cell: list[bool], alpha: float) -> tuple[float, float, float, bool]:
    """The changed-answers rule, paired per prompt (the same prompts in the same order on both sides): (the
    reference's share, the cell's share, the paired test's p-value, flagged), flagged when the cell's share is
    credibly above the reference's at `alpha` and by at least MATERIAL_SHARE."""
    before, after = [float(x) for x in reference], [float(x) for x in cell]
    share_ref, share_cell = sum(before) / len(before), sum(after) / len(after)
    # the cell "worse" is more answers changed: higher is worse, so the drop is cell - reference
    p_value = paired_evidence(before, after, higher_is_better=False).p_no_difference()
    return share_ref, share_cell, p_value, p_value < alpha and share_cell - share_ref >= MATERIAL_SHARE


def changed_by_prompt(reference: list, cell: list, alpha: float) -> tuple[list[str], float, float, float, bool] | None:
    """`changed_more` over the prompts both sides answered (each answer with `id` and `differs`): (the ids paired,
    the reference's share, the cell's, the p-value, flagged); None when no prompt was answered on both sides."""
    ref = {a.id: a for a in reference}
    now = {a.id: a for a in cell}
    ids = [pid for pid in ref if pid in now]
    if not ids:
        return None
    return (ids, *changed_more([ref[pid].differs for pid in ids], [now[pid].differs for pid in ids], alpha))
