"""The one line a user needs first: the fastest cell that is equivalent to the reference on every task and faster
by the speed rule (analysis/speed.py: credibly faster by the between-run floor at least), with its speed-up, its
interval and its launch command; or why there is none and what would settle it (which
cell, how many more samples, about how many hours at the speed its tasks ran). Pure: reads a RunResult (its drift
must be refreshed) and the Pareto walk."""

from __future__ import annotations

import math

from pydantic import BaseModel

from evalharness.analysis.pareto import pareto, scenario_throughput, vs_reference
from evalharness.records.run import RunResult


class Settle(BaseModel):
    task: str
    factor: float | None  # times the samples (None: no sample size settles it at this estimate)
    more_samples: int | None = None  # documents x repeats beyond the present ones
    unit: str = "documents x repeats"  # "documents" where the answers did not vary (the score test: repeats add nothing)
    hours: float | None = None  # at the speed the cell's task ran


class Recommendation(BaseModel):
    cell: str | None = None  # the recommended cell (None: none)
    scenario: str | None = None
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
    ref_tp = scenario_throughput(reference, chart.scenario)
    if reference is None or ref_tp is None:
        return Recommendation(why_none="the reference has no throughput in the chart's scenario: nothing to compare")
    faster = []
    for point in chart.points:
        if point.cell == run.reference:
            continue
        verdict = vs_reference(run, point.cell, chart.scenario)
        if verdict is not None and verdict.faster:
            faster.append((point, verdict))
    faster.sort(key=lambda f: -f[0].throughput)
    for point, verdict in faster:
        if point.verdict == "equivalent":
            cell = run.cells[point.cell]
            return Recommendation(cell=point.cell, scenario=chart.scenario, ratio=verdict.ratio, low=verdict.low,
                                  high=verdict.high, speed=verdict.text(), drop_upper=point.drop_upper,
                                  argv=cell.argv, env=cell.env)
    if not faster:
        return Recommendation(scenario=chart.scenario, why_none="no cell is credibly faster than the reference by "
                              "the 5% floor (the speed rule's one-sided lower bound over both sides' repeats): keep "
                              "the reference")
    unsettled = [f for f in faster if f[0].verdict == "inconclusive"]
    if not unsettled:
        return Recommendation(scenario=chart.scenario, why_none="every cell faster than the reference is worse on "
                              "some task: keep the reference")
    point, verdict = unsettled[0]
    return Recommendation(scenario=chart.scenario, ratio=verdict.ratio, low=verdict.low, high=verdict.high,
                          speed=verdict.text(), candidate=point.cell,
                          drop_upper=point.drop_upper, settle=_settle(run, point.cell),
                          why_none="no cell is both credibly faster and equivalent on every task")
