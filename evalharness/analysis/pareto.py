"""The Pareto front of throughput against drift over a run's ready cells (pure: a RunResult in, points out).

Throughput is noisy (the same cell measured 11.1 and 8.3 tok/s on two machines of one kind, and more than 10% apart
run to run on a shared one). Where a scenario ran more than once (`repeats`), each cell carries the range of its
repeats, and one cell is faster than another only when its whole range lies above the other's and it is faster by
MIN_THROUGHPUT_CHANGE at least (cells run one after another, and runs drift more than repeats spread): within the
noise, two cells are as fast as each other, and the one with less drift dominates.

Accuracy is treated the same way: with `drift_measure: accuracy` a cell's accuracy is its verdict against the
reference (analysis/equivalence.py), not its point estimate: cells equivalent within the margin are tied with the
reference and with each other, an inconclusive cell ranks below them and a worse one below that, so an improvement
within the noise never dominates the reference and 0.1-point differences under wide intervals decide nothing.
"""

from __future__ import annotations

from pydantic import BaseModel

# Repeats within one run spread less than runs, or cells measured minutes apart, do: the demo run twice on one
# machine, same code, moved the bfloat16 single-stream figure by 3% (29.3 -> 28.3 tok/s) with three repeats each
# 29.2-29.5 and 28.1-28.5. A ratio within this much of 1 is never called faster or slower, whatever the ranges.
MIN_THROUGHPUT_CHANGE = 0.05

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


def faster(a: float, a_range: tuple[float, float] | None, b: float, b_range: tuple[float, float] | None) -> bool:
    """Is throughput a higher than b beyond the noise? With a range on either side, a's low end must lie above b's
    high end (a point without a range is its own low and high end) and a be MIN_THROUGHPUT_CHANGE above b; without
    ranges (no noise known), plain comparison."""
    if a_range is None and b_range is None:
        return a > b
    return (a_range or (a, a))[0] > (b_range or (b, b))[1] and a >= (1 + MIN_THROUGHPUT_CHANGE) * b


def _range(p: ParetoPoint) -> tuple[float, float] | None:
    return None if p.low is None or p.high is None else (p.low, p.high)


def pareto_front(points: list[ParetoPoint]) -> list[ParetoPoint]:
    """Mark the points no other point beats on both axes (throughput higher is better, drift lower is better). A point
    q beats p when q is not slower (p not faster beyond the noise) and has no more drift, and q is faster beyond the
    noise or has less drift; drift is the accuracy verdict's rank where points carry one."""
    for p in points:
        beaten_by = []
        for q in points:
            if q is p:
                continue
            q_faster = faster(q.throughput, _range(q), p.throughput, _range(p))
            p_faster = faster(p.throughput, _range(p), q.throughput, _range(q))
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


def scenario_range(cell: CellResult | None, scenario: str | None) -> tuple[float, float] | None:
    """The range of one cell's repeats in one scenario; None when it ran once (or not at all)."""
    return next((s.tok_s_range() for s in (cell.throughput if cell else []) if s.name == scenario), None)


def ratio_to_reference(tp: float, tp_range: tuple[float, float] | None, ref: float,
                       ref_range: tuple[float, float] | None) -> tuple[float, float | None, float | None, str]:
    """(ratio, low, high, verdict): cell over reference, with the range of ratios the repeats allow (None without
    repeats) and 'faster', 'slower' or 'within noise' ('' when neither side has repeats: no noise known)."""
    ratio = tp / ref
    if tp_range is None and ref_range is None:
        return ratio, None, None, ""
    (lo, hi), (ref_lo, ref_hi) = tp_range or (tp, tp), ref_range or (ref, ref)
    verdict = ("faster" if faster(tp, tp_range, ref, ref_range) else
               "slower" if faster(ref, ref_range, tp, tp_range) else "within noise")
    return ratio, lo / ref_hi, (hi / ref_lo if ref_lo > 0 else None), verdict


def worth_more_than_reference(ratio: float, verdict: str) -> bool:
    """Faster than the reference beyond the noise (ratio_to_reference's verdict); measured once on both sides there
    is no noise to beat, and the between-run floor alone decides. What screening and the recommendation both ask."""
    return verdict == "faster" or (verdict == "" and ratio >= 1 + MIN_THROUGHPUT_CHANGE)


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
            points.append(ParetoPoint(cell=cid, throughput=tp, drift=drift, low=low_high[0] if low_high else None,
                                      high=low_high[1] if low_high else None, verdict=verdict, drop_upper=upper))
    return Pareto(scenario=scenario, measure=measure, throughput=throughput, points=pareto_front(points))
