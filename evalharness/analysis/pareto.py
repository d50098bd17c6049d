"""The Pareto front of throughput against drift over a run's ready cells (pure: a RunResult in, points out)."""

from __future__ import annotations

from pydantic import BaseModel

from evalharness.records.run import CellResult, RunResult


class ParetoPoint(BaseModel):
    cell: str
    throughput: float
    drift: float
    on_front: bool = False
    dominated_by: list[str] = []


class Pareto(BaseModel):
    """The ready cells on the chart's axes: `throughput` for every ready cell in run order (None where it did not
    measure the scenario), `points` for those that have both numbers, the front marked."""

    scenario: str | None
    measure: str
    throughput: dict[str, float | None]
    points: list[ParetoPoint]


def pareto_front(points: list[ParetoPoint]) -> list[ParetoPoint]:
    """Mark the points no other point beats on both axes (throughput higher is better, drift lower is better)."""
    for p in points:
        p.dominated_by = [q.cell for q in points if q is not p and q.throughput >= p.throughput and q.drift <= p.drift
                          and (q.throughput > p.throughput or q.drift < p.drift)]
        p.on_front = not p.dominated_by
    return points


def chosen_scenario(run: RunResult) -> str | None:
    """The throughput scenario on the Pareto axis: the matrix's choice, else the first single-stream one."""
    wanted = (run.meta.matrix.get("report") or {}).get("throughput_scenario")
    if wanted:
        return wanted
    scenarios = (run.meta.matrix.get("throughput") or {}).get("scenarios") or []
    single = [s["name"] for s in scenarios if s.get("concurrency") == 1]
    return single[0] if single else (scenarios[0]["name"] if scenarios else None)


def scenario_throughput(cell: CellResult | None, scenario: str | None) -> float | None:
    """Output tokens/s of one cell in one scenario, None where it has no such measurement."""
    return next((s.output_tok_s for s in (cell.throughput if cell else []) if s.name == scenario), None)


def _drift(run: RunResult, cid: str, cell: CellResult, measure: str) -> float | None:
    if cid == run.reference:
        return 0.0
    if cell.drift is None:
        return None
    if measure == "kld":
        return cell.drift.distribution.mean_kld if cell.drift.distribution else None
    return -cell.drift.accuracy_delta if cell.drift.accuracy_delta is not None else None


def pareto(run: RunResult) -> Pareto:
    """The one walk over the ready cells that every Pareto view (report table, summary, plot) renders."""
    scenario = chosen_scenario(run)
    measure = (run.meta.matrix.get("report") or {}).get("drift_measure", "accuracy")
    throughput: dict[str, float | None] = {}
    points = []
    for cid in run.cell_order:
        cell = run.cells.get(cid)
        if cell is None or cell.status != "ok":
            continue
        tp = throughput[cid] = scenario_throughput(cell, scenario)
        drift = _drift(run, cid, cell, measure)
        if tp is not None and drift is not None:
            points.append(ParetoPoint(cell=cid, throughput=tp, drift=drift))
    return Pareto(scenario=scenario, measure=measure, throughput=throughput, points=pareto_front(points))
