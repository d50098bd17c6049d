"""Three outcomes for a paired accuracy drop against a margin, and what would settle an inconclusive one (pure).

For one task of one cell, with the drop D (reference minus cell, positive is worse) and the task's margin m:

- **equivalent**: the drop's two-sided 90% interval lies inside (-m, m) (TOST: both one-sided tests at alpha 0.05);
- **worse**: the drop's one-sided 95% lower bound lies above m, i.e. H0 "D <= m" is rejected, its p-value Holm-
  adjusted over the family of comparisons the caller makes (every task of every cell in a run or a gate), so that a
  run in which nothing changed fails at most alpha of the time, however many cells it has;
- **inconclusive**: neither; `samples_to_settle` says by how much the samples would have to grow for the estimate,
  if it held, to be settled either way.

The gate passes a task on **non-inferiority** (the one-sided 95% upper bound below m; no adjustment is needed for
"every task passes": an intersection-union test keeps alpha), fails it on **worse**, and is otherwise inconclusive.
A cell is worse when any task is; equivalent (or non-inferior) when every task is; otherwise inconclusive.
Each test is the one its interval inverts (analysis/stats.py `PairedEvidence`), so verdict and interval agree. On
the t path (per-document means) the two tests that let a cell through, the pass ("D >= m" rejected) and the gain
side of equivalence ("D <= -m" rejected), are the calibrated bootstrap of analysis/nullboot.py, each interval end
that test's bound at its own margin: the plain t passes a cell truly at the margin up to 1.1x alpha and calls a cell
better by the margin "equivalent" up to 1.9x alpha at accuracy 0.95 (issue 37). The worse test stays the t: it must
reach Holm's and a first look's small levels, where no resampling can, and errs on the safe side there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Literal, Mapping

from scipy.stats import norm

from evalharness.analysis.sequential import Levels
from evalharness.analysis.stats import PairedEvidence, holm
from evalharness.matrix.base import LENGTH_TASK_PREFIX
from evalharness.records.drift import TaskDrift

Outcome = Literal["equivalent", "worse", "inconclusive"]
GateOutcome = Literal["pass", "fail", "inconclusive"]
DEFAULT_MARGIN = 0.05  # the margin when a matrix sets neither gate.margin nor gate.max_accuracy_drop
DEFAULT_ALPHA = 0.05


def margin_for(task: str, gate: Mapping | None) -> float:
    """A task's margin from a matrix's (or baseline's) gate settings: gate.margin (a number, or per task with an
    optional `default`), else max_accuracy_drop, else DEFAULT_MARGIN."""
    gate = gate or {}
    margin = gate.get("margin")
    if isinstance(margin, Mapping):
        if task in margin:
            return float(margin[task])
        if margin.get("default") is not None:
            return float(margin["default"])
    elif margin is not None:
        return float(margin)
    fallback = gate.get("max_accuracy_drop")
    return float(fallback) if fallback is not None else DEFAULT_MARGIN


@dataclass(frozen=True)
class TaskDecision:
    outcome: Outcome
    noninferior: bool  # the gate's pass: the one-sided upper bound of the drop below the margin
    drop_low: float  # the drop's two-sided 90% interval (= the one-sided 95% bounds)
    drop_high: float
    p_worse: float  # one-sided p of H0 "drop <= margin", before adjustment
    p_worse_adjusted: float
    settle_factor: float | None  # inconclusive: how many times both sides' samples would settle it (None: cannot)
    level: float = DEFAULT_ALPHA  # the alpha equivalence was tested at: the interval is 1 - 2 level
    p_equivalent: float = 1.0  # TOST's p-value (the larger of the two one-sided tests), before any adjustment


def p_equivalent(evidence: PairedEvidence, margin: float, level: float = DEFAULT_ALPHA) -> float:
    """TOST's p-value for equivalence within +-margin: the larger of the one-sided p-values of "drop >= margin" and
    "drop <= -margin", each by the calibrated pass (analysis/nullboot.py) on the t path; equivalent at `level`
    exactly when `PairedEvidence.equivalence_bounds` at that level lie inside (-margin, margin)."""
    return max(evidence.calibrated_p(margin, "below", level), evidence.calibrated_p(-margin, "above", level))


def decide(evidence: PairedEvidence, margin: float, alpha: float, p_worse_adjusted: float,
           family_size: int = 1, worse_alpha: float | None = None) -> TaskDecision:
    """`alpha`: the interval's and the equivalence test's level; `worse_alpha` (default `alpha`) the level the
    Holm-adjusted worse p is compared with (they differ for a task that looked sequentially: analysis/sequential.py
    spends each error its own way)."""
    low, high = evidence.equivalence_bounds(margin, alpha)
    equivalent = -margin < low and high < margin
    worse = p_worse_adjusted < (alpha if worse_alpha is None else worse_alpha)
    outcome: Outcome = "worse" if worse else "equivalent" if equivalent else "inconclusive"
    return TaskDecision(outcome=outcome, noninferior=high < margin, drop_low=low, drop_high=high,
                        p_worse=evidence.p_above(margin), p_worse_adjusted=p_worse_adjusted, level=alpha,
                        p_equivalent=p_equivalent(evidence, margin, alpha),
                        settle_factor=None if outcome != "inconclusive" else
                        samples_to_settle(evidence, margin, alpha, family_size))


SETTLE_POWER = 0.8  # "would settle it": the size at which the settling test succeeds with this probability


def samples_to_settle(evidence: PairedEvidence, margin: float, alpha: float, family_size: int = 1) -> float | None:
    """By how many times both sides' samples (documents x repeats, the reference's and the cell's alike) would have
    to grow for the present estimate, if it is the truth, to be settled with probability SETTLE_POWER (80%): called
    equivalent (|D| + z se < m, a one-sided z of 1 - alpha per side) or, for a drop above the margin, worse
    (D - z' se > m, z' the first Holm step's over `family_size` comparisons: the strictest it may meet); the easier
    of the two. The standard error falls as one over the square root of the samples of both sides together; the
    cell's samples alone cannot promise that (with the reference fixed its part of the variance stays), so the factor
    counts both. None when neither can happen at this estimate (it sits on the margin) or no spread is known.
    (Before issue 37 the factor put the expected bound on the margin: it settled about half the time.)"""
    se = evidence.standard_error()
    if se <= 0:
        return None
    d = evidence.estimate
    power_z = float(norm.ppf(SETTLE_POWER))
    goals = []
    if abs(d) < margin:
        goals.append((margin - abs(d)) / (float(norm.ppf(1 - alpha)) + power_z))
    if d > margin:
        goals.append((d - margin) / (float(norm.ppf(1 - alpha / max(1, family_size))) + power_z))
    goals = [g for g in goals if g > 0]
    if not goals:
        return None
    return max(1.0, (se / max(goals)) ** 2)


def decide_family(evidence: Mapping[tuple[str, str], tuple[PairedEvidence, float]], alpha: float,
                  alphas: Mapping[tuple[str, str], Levels] | None = None) -> dict[tuple[str, str], TaskDecision]:
    """Decisions for a family of (cell, task) comparisons, each with its margin, the worse-tests Holm-adjusted over
    the whole family. `alphas`: a comparison's own levels where they differ (a task that looked sequentially is
    decided at the levels of the look it stopped at: analysis/sequential.py); its Holm-adjusted p is compared with
    the worse level, its interval taken at the equivalence level."""
    keys = list(evidence)
    raw = [evidence[k][0].p_above(evidence[k][1]) for k in keys]
    adjusted = holm(raw)
    out = {}
    for k, p in zip(keys, adjusted):
        own = (alphas or {}).get(k)
        out[k] = decide(evidence[k][0], evidence[k][1], alpha if own is None else own.equivalent, p, len(keys),
                        worse_alpha=None if own is None else own.worse)
    return out


def envelope_task(task: str) -> bool:
    """A length bucket's long-context task (issue 39): it describes where a cell's verdicts hold (the report's "By
    length", the recommendation's envelope) and counts in a cell's verdict only where it is worse."""
    return task.startswith(LENGTH_TASK_PREFIX)


def judged(tasks: Iterable[TaskDrift]) -> list[TaskDrift]:
    """The decided tasks a cell's own verdict rests on: every task but a length bucket's that is not worse."""
    return [t for t in tasks if t.outcome is not None and (not envelope_task(t.task) or t.outcome == "worse")]


def cell_outcome(outcomes: Iterable[Outcome]) -> Outcome | None:
    """worse if any task is worse; equivalent if every task is; inconclusive otherwise (None: no task)."""
    outcomes = list(outcomes)
    if not outcomes:
        return None
    if "worse" in outcomes:
        return "worse"
    return "equivalent" if all(o == "equivalent" for o in outcomes) else "inconclusive"


def gate_outcome(decisions: Iterable[TaskDecision]) -> GateOutcome:
    """fail if any task is worse; pass if every task is non-inferior; inconclusive otherwise."""
    decisions = list(decisions)
    if any(d.outcome == "worse" for d in decisions):
        return "fail"
    return "pass" if all(d.noninferior for d in decisions) else "inconclusive"
