"""The one line a user needs first: the fastest cell that is equivalent to the reference on every task and faster
beyond the noise, with its speed-up and its launch command; or why there is none and what would settle it (which
cell, how many more samples, about how many hours at the speed its tasks ran). Pure: reads a RunResult (its drift
must be refreshed) and the Pareto walk."""

from __future__ import annotations

import math

from pydantic import BaseModel

from evalharness.analysis.pareto import (pareto, ratio_to_reference, scenario_range, scenario_throughput,
                                        worth_more_than_reference)
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
        cell = run.cells[point.cell]
        ratio, low, high, verdict = ratio_to_reference(point.throughput, scenario_range(cell, chart.scenario), ref_tp,
                                                       scenario_range(reference, chart.scenario))
        if worth_more_than_reference(ratio, verdict):
            faster.append((point, ratio, low, high))
    faster.sort(key=lambda f: -f[0].throughput)
    for point, ratio, low, high in faster:
        if point.verdict == "equivalent":
            cell = run.cells[point.cell]
            return Recommendation(cell=point.cell, scenario=chart.scenario, ratio=ratio, low=low, high=high,
                                  drop_upper=point.drop_upper, argv=cell.argv, env=cell.env)
    if not faster:
        return Recommendation(scenario=chart.scenario, why_none="no cell is faster than the reference beyond the "
                              "noise (its repeats' ranges and 5%): keep the reference")
    unsettled = [f for f in faster if f[0].verdict == "inconclusive"]
    if not unsettled:
        return Recommendation(scenario=chart.scenario, why_none="every cell faster than the reference is worse on "
                              "some task: keep the reference")
    point, ratio, low, high = unsettled[0]
    return Recommendation(scenario=chart.scenario, ratio=ratio, low=low, high=high, candidate=point.cell,
                          drop_upper=point.drop_upper, settle=_settle(run, point.cell),
                          why_none="no cell is both faster beyond the noise and equivalent on every task")
