"""The changed-answers rule (issue 39): per prompt (or case), whether an answer changed between two ways of asking
it, paired across the reference and the cell; the cell is flagged when its share of changed answers is credibly
above the reference's: the paired test of analysis/stats.py at alpha AND a material difference (analysis/secondary.py's
MATERIAL_SHARE), the rule every secondary figure is judged by, here one figure per cell. Every check that pairs
changed-or-not answers uses it: batch dependence, the prefix cache, calls under load and streamed (measures/*/
compare.py); benchmarks/batching_flag.py measures it. Pure."""

from __future__ import annotations

from evalharness.analysis.secondary import MATERIAL_SHARE
from evalharness.analysis.stats import paired_evidence


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
