"""The Pareto front of throughput against drift over a run's ready cells (pure: a RunResult in, points out).

Throughput is noisy (the same cell measured 11.1 and 8.3 tok/s on two machines of one kind, and one busy minute
took a repeat from 18 to 3.6 tok/s on a shared one). One cell is faster than another only when the speed rule says
so (analysis/speed.py: the ratio's interval from both cells' repeats, above the between-run floor, disturbed
repeats set aside): otherwise the two are as fast as each other, and the one with less drift dominates.

Accuracy is treated the same way: with `drift_measure: accuracy` a cell's accuracy is its verdict against the
reference (analysis/equivalence.py), not its point estimate: cells equivalent within the margin are tied with the
reference and with each other, an inconclusive cell ranks below them and a worse one below that, so an improvement
within the noise never dominates the reference and 0.1-point differences under wide intervals decide nothing.
"""

from __future__ import annotations

from pydantic import BaseModel

from evalharness.analysis.speed import Side, SpeedVerdict, scenario_verdict, side_of, speedup
from evalharness.records.measures import ScenarioResult
from evalharness.records.run import CellResult, RunResult


class ParetoPoint(BaseModel):
    cell: str
    throughput: float
    drift: float
    low: float | None = None  # the range of the repeats' output tok/s (None: measured once, no noise bar)
    high: float | None = None
    on_front: bool = False
    dominated_by: list[str] = []
    verdict: str | None = None  # accuracy: reference | equivalent | inconclusive | worse (None: the kld measure)
    drop_upper: float | None = None  # the largest one-sided 95% upper bound of a task's drop
    # the speed rule's side (analysis/speed.py): each repeat's tok/s, why it was disturbed, the adaptive plan
    rates: list[float] = []
    disturbed: list[str] = []
    plan: list[int] | None = None

    def side(self) -> Side:
        rates = tuple(self.rates) or (self.throughput,)
        return Side(rates, tuple(self.disturbed) if len(self.disturbed) == len(rates) else (),
                    tuple(self.plan) if self.plan else None)  # type: ignore[arg-type]


# accuracy verdicts, best first: the reference and cells equivalent to it are tied
VERDICT_RANK = {"reference": 0, "equivalent": 0, "inconclusive": 1, "worse": 2}


def _accuracy_rank(p: ParetoPoint) -> float:
    """Lower is better: the verdict's rank with the accuracy measure, the drift itself with kld."""
    if p.verdict is None:
        return p.drift
    return VERDICT_RANK.get(p.verdict, 1)


class Pareto(BaseModel):
    """The ready cells on the chart's axes: `throughput` for every ready cell in run order (None where it did not
    measure the scenario), `points` for those that have both numbers, the front marked."""

    scenario: str | None
    measure: str
    throughput: dict[str, float | None]
    points: list[ParetoPoint]


def faster(a: ParetoPoint, b: ParetoPoint) -> bool:
    """Is a faster than b? The speed rule's verdict between their repeats (analysis/speed.py)."""
    return speedup(a.side(), b.side()).faster


def pareto_front(points: list[ParetoPoint]) -> list[ParetoPoint]:
    """Mark the points no other point beats on both axes (throughput higher is better, drift lower is better). A point
    q beats p when q is not slower (p not faster by the speed rule) and has no more drift, and q is faster by the
    rule or has less drift; drift is the accuracy verdict's rank where points carry one."""
    for p in points:
        beaten_by = []
        for q in points:
            if q is p:
                continue
            q_faster, p_faster = faster(q, p), faster(p, q)
            q_drift, p_drift = _accuracy_rank(q), _accuracy_rank(p)
            if not p_faster and q_drift <= p_drift and (q_faster or q_drift < p_drift):
                beaten_by.append(q.cell)
        p.dominated_by = beaten_by
        p.on_front = not p.dominated_by
    return points


def chosen_scenario(run: RunResult) -> str | None:
    """The throughput scenario on the Pareto axis: the matrix's choice, else the first single-stream one."""
    return scenario_of(run.meta.matrix)


def scenario_of(matrix: dict) -> str | None:
    """chosen_scenario from a matrix as results.json keeps it (a validated matrix's model_dump(mode="json"))."""
    wanted = (matrix.get("report") or {}).get("throughput_scenario")
    if wanted:
        return wanted
    scenarios = (matrix.get("throughput") or {}).get("scenarios") or []
    single = [s["name"] for s in scenarios if s.get("concurrency") == 1]
    return single[0] if single else (scenarios[0]["name"] if scenarios else None)


def scenario_throughput(cell: CellResult | None, scenario: str | None) -> float | None:
    """Output tokens/s of one cell in one scenario, None where it has no such measurement."""
    return next((s.output_tok_s for s in (cell.throughput if cell else []) if s.name == scenario), None)


def scenario_record(cell: CellResult | None, scenario: str | None) -> ScenarioResult | None:
    return next((s for s in (cell.throughput if cell else []) if s.name == scenario), None)


def scenario_range(cell: CellResult | None, scenario: str | None) -> tuple[float, float] | None:
    """The range of one cell's repeats in one scenario; None when it ran once (or not at all)."""
    record = scenario_record(cell, scenario)
    return record.tok_s_range() if record else None


def vs_reference(run: RunResult, cid: str, scenario: str | None) -> SpeedVerdict | None:
    """The speed rule's verdict of one cell against the run's reference in one scenario (None: either lacks it)."""
    return scenario_verdict(scenario_record(run.cells.get(cid), scenario),
                            scenario_record(run.cells.get(run.reference), scenario))


def _drift(run: RunResult, cid: str, cell: CellResult, measure: str) -> float | None:
    if cid == run.reference:
        return 0.0
    if cell.drift is None:
        return None
    if measure == "kld":  # the unbiased KL(ref || cell) per token, never the coarse top-k lower bound
        dist = cell.drift.distribution
        forward = dist.forward if dist is not None else None
        return forward.estimate if forward is not None and forward.available else None
    return -cell.drift.accuracy_delta if cell.drift.accuracy_delta is not None else None


def _verdict(run: RunResult, cid: str, cell: CellResult) -> tuple[str | None, float | None]:
    if cid == run.reference:
        return "reference", 0.0
    if cell.drift is None or cell.drift.outcome is None:
        return "inconclusive", None
    return cell.drift.outcome, cell.drift.worst_drop_upper


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
            low_high = scenario_range(cell, scenario)
            verdict, upper = _verdict(run, cid, cell) if measure == "accuracy" else (None, None)
            side = side_of(scenario_record(cell, scenario))  # type: ignore[arg-type]
            points.append(ParetoPoint(cell=cid, throughput=tp, drift=drift, low=low_high[0] if low_high else None,
                                      high=low_high[1] if low_high else None, verdict=verdict, drop_upper=upper,
                                      rates=list(side.rates), disturbed=list(side.reasons()),
                                      plan=list(side.plan) if side.plan else None))
    return Pareto(scenario=scenario, measure=measure, throughput=throughput, points=pareto_front(points))
