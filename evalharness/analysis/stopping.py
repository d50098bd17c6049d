"""When measuring stops (pure; the runner's speed loop, runner/speedloop.py, calls these, and the benchmarks drive
the same functions): a throughput scenario's repeats, once the speed rule has decided against the reference or the
plan's maximum is reached; and a load sweep's steps, once a step past the operating point's load shows saturation.
Reads records and analysis/speed.py's sides only."""

from __future__ import annotations

from evalharness.analysis.speed import Side, decided, first_look, kept_indices, speedup
from evalharness.records.measures import RepeatFigures, ScenarioResult


def stop_reason(side: Side, *, remeasure: int, reference: Side | None, is_reference: bool,
                goodput: tuple[Side, Side] | None = None, goodput_requests: tuple[int, int] = (0, 0)) -> str | None:
    """Why a scenario's repeats stop here, or None to measure one more (pure; benchmarks/speed_verdicts.py drives
    the same function): the plan's maximum of kept repeats, its maximum plus `remeasure` measured, or, for a cell
    with a reference to decide against, once the speed rule has decided between the plan's minimum and maximum.
    `goodput`: (the cell's, the reference's) repeats on goodput tok/s where the matrix states an SLO, decided too
    before a cell stops: the operating point is judged on goodput; `goodput_requests`: the cell's requests must
    reach it first (the SLO's percentile's own minimum, goodput.requests_for): three single-request repeats all
    within the SLO say nothing of a cell that misses half the time, and stopping there read "faster" on goodput
    in 5.1-5.7% of runs when the true goodput was 0.72x the reference's (benchmarks/operating_point.py; issue 57)."""
    low, high = side.plan or (len(side.rates), len(side.rates))
    kept = len(kept_indices(side))
    if kept >= high:
        return f"the maximum: {high} repeats kept"
    if len(side.rates) >= high + remeasure:
        return f"{len(side.rates)} repeats measured ({len(side.rates) - kept} disturbed), {remeasure} of them again"
    if kept >= first_look((low, high)) and reference is not None and not is_reference and low < high:
        verdict = speedup(side, reference)
        on_goodput = speedup(*goodput) if goodput is not None else None
        enough = goodput_requests[0] >= goodput_requests[1]
        if decided(verdict) and (on_goodput is None or (enough and decided(on_goodput))):
            also = f"; goodput {on_goodput.text()}" if on_goodput is not None else ""
            return f"decided after {kept} repeats: {verdict.text()}{also}"
    return None


def kept_requests(figures: list[RepeatFigures], side: Side) -> int:
    """The requests of the repeats the speed rule keeps."""
    return sum(figures[i].requests for i in kept_indices(side))


def saturation(previous: ScenarioResult, current: ScenarioResult, gain: float) -> str | None:
    """Why a load sweep stops at `current` (pure): its output tok/s grew less than `gain` over the step before while
    its median end-to-end latency grew more (the load waits, in the queue or in a slower batch, instead of turning
    into tokens). None: more load still brings more tokens, or the latency did not grow (noise, not saturation)."""
    before, after = previous.e2e_s.p50, current.e2e_s.p50
    if previous.output_tok_s <= 0 or current.output_tok_s <= 0 or not before or not after:
        return None
    grew, slower = current.output_tok_s / previous.output_tok_s - 1, after / before - 1
    if grew >= gain or slower <= gain:
        return None
    load = lambda sc: f"c={sc.concurrency}" if sc.concurrency else f"{sc.request_rate:g}/s"  # noqa: E731
    return (f"saturated: output tok/s grew {grew:+.0%} from {load(previous)} to {load(current)} "
            f"({previous.output_tok_s:.1f} to {current.output_tok_s:.1f}) while the median request's end-to-end "
            f"latency grew {slower:+.0%}")


def sweep_stop(previous: ScenarioResult | None, current: ScenarioResult, point_concurrency: int | None,
               point_rate: float | None, gain: float) -> str | None:
    """Why a load sweep stops after `current` (pure): saturation against the step before, never below the operating
    point's load (its concurrency or request rate); None to go on."""
    below_point = ((point_concurrency or 0) > (current.concurrency or 0)
                   or (point_rate or 0) > (current.request_rate or 0))
    return None if previous is None or below_point else saturation(previous, current, gain)
