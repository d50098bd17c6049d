"""The prefix-cache check of a cell against the reference's own (issue 60, 1): per prompt, whether its greedy answer
changed between a cold and a warm cache, paired across the two sides by prompt and judged by the changed-answers
rule every such check uses (analysis/changed.py `changed_more`: the paired test at the gate's alpha and two points
more). The log-probabilities are shown beside it, as evidence, not judged: the floor of a float difference is the
reference's own, and no benchmark here has measured a rule on them. Reads records only."""

from __future__ import annotations

from statistics import median

from evalharness.analysis.changed import changed_by_prompt
from evalharness.measures.prefix_cache.spec import PrefixCacheChange, PrefixCacheRecord


def compare(reference: PrefixCacheRecord, cell: PrefixCacheRecord, alpha: float) -> PrefixCacheChange | None:
    """The cell's changed-by-the-cache share against the reference's, over the prompts both answered both ways;
    None when no prompt was (either side could not empty its cache)."""
    paired = changed_by_prompt(reference.answered(), cell.answered(), alpha)
    if paired is None:
        return None
    ids, share_ref, share_cell, p_value, flagged = paired
    ref = {a.id: a for a in reference.answered()}
    now = {a.id: a for a in cell.answered()}
    return PrefixCacheChange(prompts=len(ids), reference=share_ref, cell=share_cell, p_value=p_value, flagged=flagged,
                             reference_logprob_gap=_median_gap([ref[pid] for pid in ids]),
                             cell_logprob_gap=_median_gap([now[pid] for pid in ids]))


def _median_gap(answers: list) -> float | None:
    gaps = [a.logprob_gap for a in answers if a.logprob_gap is not None]
    return median(gaps) if gaps else None
