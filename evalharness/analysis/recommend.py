"""The one line a user needs first: the fastest cell that is equivalent to the reference on every task and faster
by the speed rule (analysis/speed.py: credibly faster by the between-run floor at least), with its speed-up, its
interval and its launch command; or why there is none and what would settle it (which
cell, how many more samples, about how many hours at the speed its tasks ran). Pure: reads a RunResult (its drift
must be refreshed) and the Pareto walk.

The choice is controlled (issue 37): each cell's equivalence is a test at alpha, and taking the first equivalent
one among K faster candidates would recommend a cell truly at the margin 4.8% of the time with one candidate, 21%
with 5 and 37% with 10. So the candidates' equivalence is tested as one family: each cell's p-value is the largest of
its tasks' TOST p-values (an intersection-union test: equivalent only if every task is), each scaled by alpha over
the level the task was tested at (a task stopped at a sequential look was tested at what that look spent; by the
union bound over its looks the scaled p-value stays valid), then Holm over the K candidates; the recommendation is
the fastest candidate Holm keeps. The chance that the recommended cell is truly worse by the margin or more on some
task is at most alpha, however many candidates there are (benchmarks/recommendation.py measures it: 4.6-5.1%). The
report says no more than that: a cell truly better by the margin was called equivalent more often than alpha where
accuracy is near 1 and few documents carry the difference (the calibrated test's gain side, 1.22x at gsm8k's 0.95 on
150 documents; 0.89-0.94x at sm120's 300, benchmarks/README.md), an error that ships nothing worse."""

from __future__ import annotations

import math

from evalharness.analysis.equivalence import DEFAULT_ALPHA, envelope_task
from evalharness.analysis.pareto import pareto, vs_reference
from evalharness.analysis.stats import holm
from evalharness.records.decision import Recommendation, Settle  # noqa: F401  (the record; re-exported)
from evalharness.records.drift import CellDrift
from evalharness.records.run import RunResult


def equivalence_p(drift: CellDrift | None, alpha: float) -> float:
    """A cell's p-value for "equivalent on every task": the largest over its tasks of TOST's p-value scaled by
    alpha / the level the task was tested at (1.0 where a task was not compared or no p is recorded). A length
    bucket's task (an envelope: the recommendation states over which lengths it holds) counts only where it is worse,
    which rules the cell out."""
    if drift is None or not drift.tasks:
        return 1.0
    if any(envelope_task(t.task) and t.outcome == "worse" for t in drift.tasks):
        return 1.0
    worst = 0.0
    for t in (t for t in drift.tasks if not envelope_task(t.task)):
        if not t.comparable or t.p_equivalent is None:
            return 1.0
        level = t.level or alpha
        worst = max(worst, min(1.0, t.p_equivalent * alpha / level))
    return worst


def controlled_choice(p_values: list[float], alpha: float) -> tuple[int | None, list[float]]:
    """The first (fastest: `p_values` in speed order) candidate whose Holm-adjusted equivalence p is below alpha, and
    the adjusted p-values; None when Holm keeps none. Pure, for the benchmark too."""
    adjusted = [float(p) for p in holm(p_values)] if p_values else []
    first = next((i for i, p in enumerate(adjusted) if p < alpha), None)
    return first, adjusted


def _settle(run: RunResult, cid: str) -> list[Settle]:
    cell = run.cells[cid]
    seconds = {t.task: t.seconds for t in cell.quality}
    reference = run.cells.get(run.reference)
    reference_seconds = {t.task: t.seconds for t in (reference.quality if reference else [])}
    out = []
    for t in cell.drift.tasks if cell.drift else []:
        if t.outcome != "inconclusive" or envelope_task(t.task):  # a length bucket does not hold the choice up
            continue
        # the factor is on both sides' samples (analysis/equivalence.py): the reference's answers are counted too
        samples = t.paired if t.method == "score" else t.paired * (t.repeats[0] + t.repeats[1])
        extra = None if t.settle_factor is None else math.ceil(samples * (t.settle_factor - 1))
        both = seconds.get(t.task, 0.0) + reference_seconds.get(t.task, 0.0)
        hours = None if t.settle_factor is None or not both else both * (t.settle_factor - 1) / 3600
        out.append(Settle(task=t.task, factor=t.settle_factor, more_samples=extra, hours=hours,
                          unit="documents, answered by both sides" if t.method == "score" else
                          "answers (documents x repeats, both sides)"))
    return out


def recommend(run: RunResult) -> Recommendation:
    chart = pareto(run)
    reference = run.cells.get(run.reference)
    if reference is None or chart.throughput.get(run.reference) is None:
        return Recommendation(point=chart.point_words, why_none="the reference has no throughput at the operating "
                              "point: nothing to compare")
    faster = []
    for point in chart.points:
        if point.cell == run.reference:
            continue
        verdict = vs_reference(run, point.cell)
        if verdict is not None and verdict.faster:
            faster.append((point, verdict))
    faster.sort(key=lambda f: -f[0].throughput)
    unit = "goodput tok/s" if chart.axis.startswith("goodput") else "output tok/s"
    ref_at = next((p.at for p in chart.points if p.cell == run.reference), None)
    alpha = float((run.meta.matrix.get("gate") or {}).get("alpha") or DEFAULT_ALPHA)
    chosen, adjusted = controlled_choice([equivalence_p(run.cells[p.cell].drift, alpha) for p, _ in faster], alpha)
    family = dict(candidates=len(faster), alpha=alpha)
    if chosen is not None:
        point, verdict = faster[chosen]
        cell = run.cells[point.cell]
        return Recommendation(cell=point.cell, scenario=chart.scenario, point=chart.point_words, at=point.at,
                              unit=unit, reference_at=ref_at, ratio=verdict.ratio, low=verdict.low,
                              high=verdict.high, speed=verdict.text(), drop_upper=point.drop_upper,
                              argv=cell.argv, env=cell.env, p_adjusted=adjusted[chosen], **family)
    if not faster:
        return Recommendation(scenario=chart.scenario, point=chart.point_words, unit=unit,
                              why_none="no cell is credibly faster than the reference by "
                              "the 5% floor (the speed rule's one-sided lower bound over both sides' repeats): keep "
                              "the reference")
    unsettled = [(i, f) for i, f in enumerate(faster) if f[0].verdict in ("inconclusive", "equivalent")]
    if not unsettled:
        return Recommendation(scenario=chart.scenario, point=chart.point_words, unit=unit, why_none="every cell "
                              "faster than the reference is worse on some task: keep the reference", **family)
    index, (point, verdict) = unsettled[0]
    why = "no cell is both credibly faster and equivalent on every task"
    if point.verdict == "equivalent":  # equivalent by its own tests, not once the choice among the candidates counts
        why = (f"{point.cell} is equivalent on every task by its own tests, but not once the choice among the "
               f"{len(faster)} faster cells is counted (Holm-adjusted p {adjusted[index]:.3g}, not below {alpha})")
    return Recommendation(scenario=chart.scenario, point=chart.point_words, unit=unit, at=point.at,
                          reference_at=ref_at, ratio=verdict.ratio, low=verdict.low, high=verdict.high,
                          speed=verdict.text(), candidate=point.cell, p_adjusted=adjusted[index],
                          drop_upper=point.drop_upper, settle=_settle(run, point.cell), why_none=why, **family)
