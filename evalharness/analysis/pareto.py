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

from evalharness.analysis.operating import (
    CellFigure, Curve, OperatingPoint, curve_of, figure_at, operating_point, resolve, verdict_between)
from evalharness.analysis.speed import Side, SpeedVerdict, kept_rates, set_aside, speedup
from evalharness.records.decision import Pareto, ParetoPoint  # noqa: F401  (the models this module fills)
from evalharness.records.measures import ScenarioResult
from evalharness.records.run import CellResult, RunResult, parallel_gpus


def point_side(p: ParetoPoint) -> Side:
    """The speed rule's side of a point (its repeats, their disturbances, its plan)."""
    rates = tuple(p.rates) or (p.throughput,)
    return Side(rates, tuple(p.disturbed) if len(p.disturbed) == len(rates) else (),
                tuple(p.plan) if p.plan else None)  # type: ignore[arg-type]


# accuracy verdicts, best first: the reference and cells equivalent to it are tied
VERDICT_RANK = {"reference": 0, "equivalent": 0, "inconclusive": 1, "worse": 2}


def _accuracy_rank(p: ParetoPoint) -> float:
    """Lower is better: the verdict's rank with the accuracy measure, the drift itself with kld."""
    if p.verdict is None:
        return p.drift
    return VERDICT_RANK.get(p.verdict, 1)


def faster(a: ParetoPoint, b: ParetoPoint) -> bool:
    """Is a faster than b? The speed rule's verdict between their repeats (analysis/speed.py)."""
    return speedup(point_side(a), point_side(b)).faster


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


def chosen_point(run: RunResult) -> OperatingPoint:
    """Where the run's decisions read speed (analysis/operating.py; max_goodput resolved to the reference's load)."""
    reference = run.cells.get(run.reference)
    return resolve(operating_point(run.meta.matrix), reference.throughput if reference else [])


def scenario_throughput(cell: CellResult | None, scenario: str | None) -> float | None:
    """Output tokens/s of one cell in one scenario, None where it has no such measurement."""
    return next((s.output_tok_s for s in (cell.throughput if cell else []) if s.name == scenario), None)


def scenario_record(cell: CellResult | None, scenario: str | None) -> ScenarioResult | None:
    return next((s for s in (cell.throughput if cell else []) if s.name == scenario), None)


def cell_figure(run: RunResult, cid: str) -> CellFigure | None:
    """One cell's figure at the run's operating point (None: it did not measure there)."""
    cell = run.cells.get(cid)
    return figure_at(cell.throughput, chosen_point(run)) if cell else None


def vs_reference(run: RunResult, cid: str) -> SpeedVerdict | None:
    """The speed rule's verdict of one cell against the run's reference at the operating point (None: either lacks
    it)."""
    cell, reference = run.cells.get(cid), run.cells.get(run.reference)
    if cell is None or reference is None:
        return None
    return verdict_between(cell.throughput, reference.throughput, chosen_point(run))


def axis_words(point: OperatingPoint) -> str:
    if point.kind == "scenario" and not point.targets:
        return f"output tok/s in scenario {point.scenario or 'none'}"
    return f"{point.unit} {point.words()}"


def _drift(run: RunResult, cid: str, cell: CellResult, measure: str) -> float | None:
    if cid == run.reference:
        return 0.0
    if cell.drift is None:
        return None
    if measure == "kld":  # the unbiased KL(ref || cell) per token, never the coarse top-k lower bound
        dist = cell.drift.numerics()
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
    point = chosen_point(run)
    measure = (run.meta.matrix.get("report") or {}).get("drift_measure", "accuracy")
    throughput: dict[str, float | None] = {}
    points = []
    for cid in run.cell_order:
        cell = run.cells.get(cid)
        if cell is None or cell.status != "ok":
            continue
        figure = figure_at(cell.throughput, point)
        tp = throughput[cid] = None if figure is None else figure.value
        drift = _drift(run, cid, cell, measure)
        if figure is not None and drift is not None:
            low_high = figure.range()
            verdict, upper = _verdict(run, cid, cell) if measure == "accuracy" else (None, None)
            side = figure.side
            kept = kept_rates(side)
            points.append(ParetoPoint(cell=cid, throughput=figure.value, drift=drift,
                                      low=low_high[0] if low_high else None, high=low_high[1] if low_high else None,
                                      verdict=verdict, drop_upper=upper, rates=list(side.rates),
                                      disturbed=list(side.reasons()), plan=list(side.plan) if side.plan else None,
                                      at=figure.scenario, meets=figure.meets,
                                      kept_low=min(kept) if len(kept) > 1 else None,
                                      kept_high=max(kept) if len(kept) > 1 else None,
                                      set_aside=len(set_aside(side))))
    ats = {p.at for p in points}
    scenario = point.scenario if point.kind == "scenario" else (next(iter(ats)) if len(ats) == 1 else None)
    return Pareto(scenario=scenario, measure=measure, throughput=throughput, points=pareto_front(points),
                  axis=axis_words(point), point_words=point.words())


def curves(run: RunResult) -> list[Curve]:
    """Each ok cell's load sweep as a throughput-per-GPU against interactivity curve, in run order."""
    point = chosen_point(run)
    out = []
    for cid in run.cell_order:
        cell = run.cells.get(cid)
        if cell is None or cell.status != "ok":
            continue
        curve = curve_of(cid, cell.throughput, point, gpus=parallel_gpus(cell.args), reference=cid == run.reference)
        if curve is not None:
            out.append(curve)
    return out
