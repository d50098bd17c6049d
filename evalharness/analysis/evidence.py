"""One task's paired evidence between two sides' records, and a decision written onto its TaskDrift: what the drift
against the reference (analysis/drift.py), the sequential looks (analysis/looks.py) and the quality answered
alone against the operating concurrency (measures/batching/compare.py) share. Reads records only.
"""

from __future__ import annotations

from pathlib import Path

from evalharness.analysis.equivalence import TaskDecision
from evalharness.analysis.pairing import (Headline, SideScores, UnpairableMetric, check_prompts, pair,
                                          pairable_aggregation, side_scores)
from evalharness.analysis.stats import PairedEvidence, mcnemar_exact, paired_evidence
from evalharness.records.drift import TaskDrift
from evalharness.records.measures import TaskScore

CONFIDENCE = 0.9  # intervals shown: two-sided 90%, the one-sided 95% bounds the verdicts use


def _refusal(out: TaskDrift, reason: str) -> tuple[TaskDrift, None]:
    out.comparable, out.reason = False, reason
    return out, None


def task_evidence(task: str, ref_score: TaskScore, cell_score: TaskScore, run_dir: Path,
                  cell_dir: Path | None = None,
                  read: dict[tuple, SideScores] | None = None) -> tuple[TaskDrift, PairedEvidence | None]:
    """Pair one task's headline records per subtask and document, each side's mean over its repeats; refuse across
    task versions and for a metric that cannot be paired. The drift without its verdict, and the evidence for one.
    `cell_dir`: the cell's run folder when it is another run's (`compare`); by default both sides are in `run_dir`.
    `read`: the reference's sides already read in this refresh (every cell pairs with the same reference files)."""
    out = TaskDrift(task=task, metric=ref_score.metric, confidence=CONFIDENCE)
    if ref_score.error or cell_score.error or not ref_score.samples or not cell_score.samples:
        return _refusal(out, "a side has no samples (the task failed)")
    if ref_score.version != cell_score.version:
        return _refusal(out, f"task versions differ ({ref_score.version} vs {cell_score.version}): not paired")
    if ref_score.subtasks and ref_score.subtasks.keys() != cell_score.subtasks.keys():
        return _refusal(out, f"the group's subtasks differ ({len(ref_score.subtasks)} in the reference, "
                             f"{len(cell_score.subtasks)} in the cell): not paired")
    if any(sub.version != cell_score.subtasks[name].version for name, sub in ref_score.subtasks.items()):
        return _refusal(out, "subtask versions differ: not paired")
    try:
        pairable_aggregation(task, ref_score.metric, ref_score.aggregation)
        for name, sub in ref_score.subtasks.items():
            pairable_aggregation(name, sub.metric, sub.aggregation)
        key = (str(run_dir), task, tuple(p for _, p, _ in ref_score.all_repeats()))
        ref = read[key] if read is not None and key in read else side_scores(run_dir, ref_score)
        if read is not None:
            read[key] = ref
        cell = side_scores(cell_dir or run_dir, cell_score, Headline.of(ref_score))
        check_prompts(task, ref.prompts, cell.prompts)
    except UnpairableMetric as exc:
        return _refusal(out, str(exc))
    return evidence_of(out, ref, cell, ref_score.higher_is_better is not False)


def evidence_of(out: TaskDrift, ref: SideScores, cell: SideScores,
                higher_is_better: bool) -> tuple[TaskDrift, PairedEvidence | None]:
    """Fill a TaskDrift's estimate from two sides' per-document means (pure, but for the pairing)."""
    paired = pair(ref.means, cell.means, ref.weights)
    if not paired.keys:
        return _refusal(out, "no samples could be paired by subtask, document, filter and metric")
    evidence = paired_evidence(paired.before, paired.after, weights=paired.weights, higher_is_better=higher_is_better)
    weights = paired.weights or [1.0] * len(paired.keys)
    total = sum(weights)
    out.paired = len(paired.keys)
    out.subtasks_paired = paired.per_subtask() if len(paired.per_subtask()) > 1 else {}
    out.repeats = (ref.repeats, cell.repeats)
    out.higher_is_better = higher_is_better
    out.pooled_instructions = paired.weights is not None
    out.reference = sum(w * v for w, v in zip(weights, paired.before)) / total
    out.cell = sum(w * v for w, v in zip(weights, paired.after)) / total
    out.delta = -evidence.estimate + 0.0  # + 0.0: no '-0.000' for no change
    out.method = evidence.method
    out.p_value = evidence.p_no_difference()
    if evidence.method == "score":
        out.right_to_wrong, out.wrong_to_right = evidence.lost, evidence.gained
        out.exact_mcnemar_p = mcnemar_exact(evidence.lost, evidence.gained)
    return out, evidence


def apply_decision(drift: TaskDrift, decision: TaskDecision, margin: float) -> None:
    drift.margin = margin
    drift.outcome = decision.outcome
    drift.noninferior = decision.noninferior
    drift.ci_low, drift.ci_high = -decision.drop_high + 0.0, -decision.drop_low + 0.0  # of delta = -drop
    drift.p_worse, drift.p_worse_adjusted = decision.p_worse, decision.p_worse_adjusted
    drift.settle_factor = decision.settle_factor
    # the interval is the one the decision used: 1 - 2 x the alpha it was tested at (a task stopped at a sequential
    # look is tested at what that look spent, so its interval is wider than 90%: issue 37 found 91.1-99.97% printed
    # as 90%)
    drift.confidence = 1 - 2 * decision.level
    drift.level = decision.level
    drift.p_equivalent = decision.p_equivalent
