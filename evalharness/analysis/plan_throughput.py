"""What a matrix's throughput phase costs before it runs (issue 38): per scenario and per load-sweep step, the load,
the requests of one repeat, the repeats (the reference all `repeats.max`; a cell from `repeats.min` to `repeats.max`,
stopping once the speed rule decides), the output tokens of a repeat and, where a previous run says, its time; then
the totals for the reference, one cell and every cell of the matrix. Pure: the matrix as the dict results.json keeps
and optionally a previous run's record in, a ThroughputPlan out; render/plan.py writes it beside the quality plan.

The sweep's steps come from the matrix's own schema (matrix/throughput.py `ThroughputSection.all_scenarios()`, the
one expansion the runner measures), and where a sweep may stop follows the runner's rule (analysis/stopping.py
`sweep_stop`: at saturation, never before the operating point's load). It must not import phases, serving or
runner (tests/unit/test_layout.py).

Times are never guessed: a step's time per repeat comes from a previous run's reference (`--from`), its record of
the same scenario name, else its scenario of the nearest load; without one the time is unknown and only the
requests and tokens are priced.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from pydantic import BaseModel

from evalharness.matrix.throughput import Scenario, ThroughputSection
from evalharness.records.measures import ScenarioResult
from evalharness.records.run import RunResult

class StepPrice(BaseModel):
    """One scenario or sweep step: what a repeat of it sends and, where known, how long it takes."""

    name: str
    sweep_step: bool = False
    concurrency: int | None = None
    request_rate: float | None = None
    requests: int | None = None  # per repeat; None: bound by duration_s alone
    requests_at_most: bool = False  # duration_s may end a repeat before its requests
    duration_s: float | None = None  # the scenario's own time bound of a repeat
    output_len: int
    output_tokens: int | None = None  # per repeat: requests x output_len
    tokens_at_most: bool = False  # ignore_eos off (a request may end early) or requests at most
    repeats: tuple[int, int] = (1, 1)  # (min, max): the reference measures max, a cell min to max
    warmup: int
    remeasure: int
    seconds: float | None = None  # per repeat, estimated
    seconds_source: str | None = None

    def load(self) -> str:
        return f"c{self.concurrency}" if self.concurrency is not None else f"{self.request_rate:g} req/s"


class Totals(BaseModel):
    requests: int = 0
    tokens: int = 0
    minutes: float | None = None  # None: some step's time is unknown


class ThroughputPlan(BaseModel):
    cells: int  # cells compared with the reference, each measuring every scenario
    steps: list[StepPrice] = []
    previous: str | None = None  # the run the times came from
    reference: Totals = Totals()
    cell_min: Totals = Totals()  # one cell, every scenario and step at repeats.min
    cell_max: Totals = Totals()  # one cell at repeats.max: at most
    all_min: Totals = Totals()  # the reference and every cell at min
    all_max: Totals = Totals()  # the reference and every cell at max: at most
    earliest_stop: str | None = None  # the first sweep step after which saturation may stop a sweep
    unknown_requests: list[str] = []  # duration-bound scenarios: their requests are not counted in the totals
    notes: list[str] = []


def _price(scenario: Scenario, sweep_step: bool) -> StepPrice:
    requests, duration = scenario.requests, scenario.duration_s
    if requests is None and duration is None:  # phases/throughput/client.py `measure_repeat`'s default
        requests = max(8, 4 * (scenario.concurrency or 1))
    step = StepPrice(name=scenario.name, sweep_step=sweep_step, concurrency=scenario.concurrency,
                     request_rate=scenario.request_rate, requests=requests,
                     requests_at_most=requests is not None and duration is not None, duration_s=duration,
                     output_len=scenario.output_len, repeats=scenario.repeat_plan(),
                     warmup=scenario.warmup_requests, remeasure=scenario.remeasure)
    if requests is not None:
        step.output_tokens = requests * scenario.output_len
        step.tokens_at_most = step.requests_at_most or not scenario.ignore_eos
    return step


def _nearest(records: list[ScenarioResult], step: StepPrice) -> ScenarioResult | None:
    """The reference's record of the nearest load (by ratio) of the same kind: concurrency to concurrency, rate to
    rate."""
    if step.concurrency is not None:
        same = [(r, r.concurrency, step.concurrency) for r in records if r.concurrency]
    else:
        same = [(r, r.request_rate, step.request_rate) for r in records if r.request_rate]
    same = [s for s in same if s[0].output_tok_s > 0]
    if not same:
        return None
    # a tie goes to the lower load: its tok/s is rarely above the higher one's, so the time is not understated
    return min(same, key=lambda s: (abs(math.log(s[1] / s[2])), s[1]))[0]


def _time(step: StepPrice, records: list[ScenarioResult]) -> None:
    """A repeat's seconds: its output tokens over the tok/s of the reference's same-name record, else of its
    nearest load's; a duration-bound repeat without a request count lasts its duration_s."""
    if step.output_tokens is None:
        step.seconds, step.seconds_source = step.duration_s, "its duration_s"
        return
    if not records:
        return
    own = next((r for r in records if r.name == step.name and r.output_tok_s > 0), None)
    found = own or _nearest(records, step)
    if found is None:
        return
    step.seconds = step.output_tokens / found.output_tok_s
    if step.duration_s is not None:
        step.seconds = min(step.seconds, step.duration_s)
    load = f"c{found.concurrency}" if found.concurrency else f"{found.request_rate:g} req/s"
    step.seconds_source = (f"its own {found.output_tok_s:,.1f} tok/s" if own else
                           f"nearest: {found.name} ({load}, {found.output_tok_s:,.1f} tok/s)")


def _add(totals: Totals, step: StepPrice, repeats: int, times: int = 1) -> None:
    totals.requests += (step.requests or 0) * repeats * times
    totals.tokens += (step.output_tokens or 0) * repeats * times
    if totals.minutes is not None:
        totals.minutes = None if step.seconds is None else totals.minutes + step.seconds * repeats * times / 60


def _earliest_stop(steps: list[StepPrice], point: Mapping[str, Any] | None) -> str | None:
    """The first step after which saturation may end a sweep: the runner compares a step with the one before and
    never stops below the operating point's load (analysis/stopping.py `sweep_stop`)."""
    point = point or {}
    for i, step in enumerate(steps):
        below = ((point.get("concurrency") or 0) > (step.concurrency or 0)
                 or (point.get("request_rate") or 0) > (step.request_rate or 0))
        if i >= 1 and not below:
            return step.name if i < len(steps) - 1 else None
    return None


def _sum(plan: ThroughputPlan) -> None:
    """The totals of the reference, one cell and every cell from the steps (their repeats, requests and times)."""
    for name in ("reference", "cell_min", "cell_max", "all_min", "all_max"):
        setattr(plan, name, Totals(minutes=0.0))
    for step in plan.steps:
        low, high = step.repeats
        _add(plan.reference, step, high)
        _add(plan.cell_min, step, low)
        _add(plan.cell_max, step, high)
        for totals, cell_repeats in ((plan.all_min, low), (plan.all_max, high)):
            _add(totals, step, high)
            _add(totals, step, cell_repeats, plan.cells)


def time_at_quality_rate(plan: ThroughputPlan, tok_s: float, concurrency: int) -> ThroughputPlan:
    """A copy of `plan` whose steps with no time are timed from the quality phase's output tok/s at its
    concurrency (stated, issue 61, 4): a stream no faster than one of the quality phase's (tok_s / concurrency),
    the box no faster than the quality phase in all (tok_s). A stream is faster alone and a box faster at more
    streams, so the times are at most these, prefill aside (not counted: a length scenario's long prompt adds to
    it). A request-rate step is left unknown: its load is not a number of streams."""
    out = plan.model_copy(deep=True)
    for step in out.steps:
        if step.seconds is not None or step.output_tokens is None or step.concurrency is None:
            continue
        rate = tok_s * min(step.concurrency, concurrency) / concurrency
        step.seconds = step.output_tokens / rate
        if step.duration_s is not None:
            step.seconds = min(step.seconds, step.duration_s)
        step.seconds_source = f"at most: {rate:,.0f} tok/s (the quality phase's, by streams)"
    _sum(out)
    return out


def step_seconds(plan: ThroughputPlan, point: Mapping[str, Any] | None,
                 scenario: str | None) -> tuple[float | None, str]:
    """A repeat's seconds of the operating point's scenario (what confirmation measures each launch) and which step
    that is: a stated load's step, `report.throughput_scenario`, else the first single-stream scenario; at most the
    slowest step where the point is chosen at run time (max_goodput)."""
    point = point or {}
    steps = plan.steps
    if point.get("max_goodput"):
        timed = [s for s in steps if s.seconds is not None]
        if not timed or len(timed) < len(steps):
            return None, "the operating point is chosen at run time; some step's time is unknown"
        slowest = max(timed, key=lambda s: s.seconds or 0.0)
        return slowest.seconds, f"at most {slowest.name} (the slowest step: the point is chosen at run time)"
    if point.get("concurrency") or point.get("request_rate"):
        found = next((s for s in steps if (point.get("concurrency") and s.concurrency == point["concurrency"]) or
                      (point.get("request_rate") and s.request_rate == point["request_rate"])), None)
    else:
        found = next((s for s in steps if s.name == scenario), None) if scenario else \
            next((s for s in steps if s.concurrency == 1), None)
    if found is None:
        return None, "no scenario at the operating point"
    return found.seconds, found.name if found.seconds is not None else f"{found.name}: time unknown"


def price_throughput(matrix: Mapping[str, Any], cells: int, previous: RunResult | None = None,
                     previous_name: str | None = None) -> ThroughputPlan | None:
    """The throughput phase's price; None when the matrix has no throughput section. `cells`: the cells compared
    with the reference (as the quality plan counts them); `previous`: a run whose reference gives the times."""
    if not matrix.get("throughput"):
        return None
    section = ThroughputSection.model_validate(matrix["throughput"])
    plan = ThroughputPlan(cells=cells)
    plan.steps = [_price(s, False) for s in section.scenarios]
    sweep = section.sweep
    swept = [_price(s, True) for s in sweep.steps()] if sweep else []
    plan.steps += swept
    reference = previous.cells.get(previous.reference) if previous is not None else None
    records = list(reference.throughput) if reference is not None else []
    if previous is not None:
        plan.previous = f"the reference of {previous_name or 'the previous run'}" + (
            "" if records else " (no throughput records: times unknown)")
    for step in plan.steps:
        _time(step, records)
    _sum(plan)
    plan.unknown_requests = [s.name for s in plan.steps if s.requests is None]
    plan.earliest_stop = _earliest_stop(swept, (matrix.get("report") or {}).get("operating_point")) if swept else None
    if plan.earliest_stop:
        plan.notes.append(f"saturation can stop a sweep after {plan.earliest_stop} (a step that adds less than "
                          f"{sweep.saturation_gain:.0%} output tok/s while its latency grows; never "
                          "before the operating point's load), the reference's as a cell's: the sweep's figures are "
                          "at most")
    if any(s.remeasure for s in plan.steps):
        plan.notes.append("a repeat judged disturbed is measured again (up to each scenario's `remeasure`, "
                          f"{max(s.remeasure for s in plan.steps)} here): not counted above")
    warmup = sum(s.warmup for s in plan.steps)
    if warmup:
        plan.notes.append(f"plus {warmup} warm-up request(s) in each cell and the reference (before a scenario's "
                          "first repeat; a sweep's at its first step only): not counted above")
    if plan.unknown_requests:
        plan.notes.append(f"{', '.join(plan.unknown_requests)}: bound by duration_s alone, requests unknown before a "
                          "run: not counted in the requests")
    return plan
