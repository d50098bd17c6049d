"""The one line a user needs first: the fastest cell that is equivalent to the reference on every task and faster
by the speed rule (analysis/speed.py: credibly faster by the between-run floor at least), with its speed-up, its
interval and its launch command; or why there is none and what would settle it (which
cell, how many more samples, about how many hours at the speed its tasks ran). Pure: reads a RunResult (its drift
must be refreshed) and the Pareto walk."""

from __future__ import annotations

import math

from pydantic import BaseModel

from evalharness.analysis.pareto import pareto, vs_reference
from evalharness.records.run import RunResult


class Settle(BaseModel):
    task: str
    factor: float | None  # times the samples (None: no sample size settles it at this estimate)
    more_samples: int | None = None  # documents x repeats beyond the present ones
    unit: str = "documents x repeats"  # "documents" where the answers did not vary (the score test: repeats add nothing)
    hours: float | None = None  # at the speed the cell's task ran


class Recommendation(BaseModel):
    cell: str | None = None  # the recommended cell (None: none)
    scenario: str | None = None  # the scenario read, where every cell is read at one
    point: str = ""  # the operating point in words ('at p90 TPOT ≤ 50 ms, concurrency 8')
    unit: str = "output tok/s"  # or goodput tok/s under an SLO
    at: str | None = None  # the step the recommended (or candidate) cell was read at
    reference_at: str | None = None
    ratio: float | None = None
    low: float | None = None
    high: float | None = None
    drop_upper: float | None = None
    speed: str | None = None  # the speed rule's words for the cell against the reference ('1.48x [1.31–1.67] faster')
    argv: list[str] = []
    env: dict[str, str] = {}
    why_none: str | None = None
    candidate: str | None = None  # the fastest faster cell whose accuracy is not settled
    settle: list[Settle] = []


def _settle(run: RunResult, cid: str) -> list[Settle]:
    cell = run.cells[cid]
    seconds = {t.task: t.seconds for t in cell.quality}
    out = []
    for t in cell.drift.tasks if cell.drift else []:
        if t.outcome != "inconclusive":
            continue
        samples = t.paired * t.repeats[1]  # the cell's own, as its seconds below are (the reference's are shared)
        extra = None if t.settle_factor is None else math.ceil(samples * (t.settle_factor - 1))
        hours = None if t.settle_factor is None or not seconds.get(t.task) else \
            seconds[t.task] * (t.settle_factor - 1) / 3600
        out.append(Settle(task=t.task, factor=t.settle_factor, more_samples=extra, hours=hours,
                          unit="documents" if t.method == "score" else "documents x repeats"))
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
    for point, verdict in faster:
        if point.verdict == "equivalent":
            cell = run.cells[point.cell]
            return Recommendation(cell=point.cell, scenario=chart.scenario, point=chart.point_words, at=point.at, unit=unit, reference_at=ref_at, ratio=verdict.ratio, low=verdict.low,
                                  high=verdict.high, speed=verdict.text(), drop_upper=point.drop_upper,
                                  argv=cell.argv, env=cell.env)
    if not faster:
        return Recommendation(scenario=chart.scenario, point=chart.point_words, unit=unit, why_none="no cell is credibly faster than the reference by "
                              "the 5% floor (the speed rule's one-sided lower bound over both sides' repeats): keep "
                              "the reference")
    unsettled = [f for f in faster if f[0].verdict == "inconclusive"]
    if not unsettled:
        return Recommendation(scenario=chart.scenario, point=chart.point_words, unit=unit, why_none="every cell faster than the reference is worse on "
                              "some task: keep the reference")
    point, verdict = unsettled[0]
    return Recommendation(scenario=chart.scenario, point=chart.point_words, unit=unit, at=point.at, reference_at=ref_at, ratio=verdict.ratio, low=verdict.low, high=verdict.high,
                          speed=verdict.text(), candidate=point.cell,
                          drop_upper=point.drop_upper, settle=_settle(run, point.cell),
                          why_none="no cell is both credibly faster and equivalent on every task")
