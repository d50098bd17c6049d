"""The operating point: where the speed half of every decision is read (issue 38). The front, "vs reference",
screening and the recommendation ask `verdict_between` / `figure_at`, so a matrix that serves at concurrency 32
is decided at 32, not by its single-stream figure. Pure: reads records (and the matrix as results.json keeps it).

- **Where**: `report.operating_point` is a stated load (`{concurrency: N}` or `{request_rate: R}`: the scenario or
  sweep step at it) or `max_goodput`: the sweep step where the reference serves the most goodput among those meeting
  the SLO (the load today's configuration would be run at), every cell read at that same load. Without one,
  `report.throughput_scenario` (or the first single-stream scenario), as before.
- **One load for every cell, not each cell at its own best**: choosing each side's best step and comparing the two
  makes a step whose percentile sits near a target flip between loads from run to run, and the rule then compares
  two loads, not two configurations (benchmarks/operating_point.py measures both: false "faster" under the null of
  one engine). At one load a faster configuration still shows: a closed loop of N streams turns shorter latencies
  into more tokens per second. How far each cell's own SLO-meeting loads reach is reported beside it.
- **The figure**: output tokens/s of the kept repeats; with an SLO (`report.slo`), goodput tokens/s (the output
  tokens of requests meeting every target per second, analysis/goodput.py). Per repeat either way, so the one speed
  rule (analysis/speed.py) gives its interval and verdict, on the same repeats as the printed value: those the host
  sampler did not flag. A repeat whose requests missed the SLO has low goodput, and that is the signal: before
  issue 57 the rule set such a repeat aside as an outlier, and a cell at 31 tok/s with 2 of 5 requests missing its
  TTFT target read "1.29x faster" on goodput against a reference at 24.04. A cell none of whose requests meets
  the SLO there has goodput 0: slower than a reference that has some.
- **Crossovers**: the same rule on output tok/s at each sweep step both sides measured; a cell faster at one load
  and slower at another is said to be, with the loads between which it turns.
Must not import phases, serving, the runner or rendering.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from evalharness.analysis.goodput import StepSlo, Target, repeat_goodput, slo_words, step_slo, targets_of
from evalharness.analysis.speed import Side, SpeedVerdict, kept_indices, kept_rates, side_of, speedup
from evalharness.matrix.base import LENGTH_SCENARIO_PREFIX
from evalharness.matrix.throughput import SweepSection
from evalharness.records.measures import RepeatFigures, ScenarioResult

Kind = Literal["scenario", "load", "max_goodput"]
ZERO_GOODPUT = 1e-3  # tok/s a repeat with no good request enters the speed rule's logs as (log 0 is undefined)


@dataclass(frozen=True)
class OperatingPoint:
    kind: Kind
    scenario: str | None = None  # kind 'scenario': the named one
    concurrency: int | None = None  # kind 'load'
    request_rate: float | None = None
    targets: tuple[Target, ...] = ()
    sweep: str | None = None  # the sweep's name: its steps are `<sweep>-c<N>` / `<sweep>-r<R>`
    # kind 'load' resolved from max_goodput (`resolve`): 'best' where the reference serves the most goodput under
    # the SLO, 'none' where it meets the SLO at no load measured (its lowest load is read)
    by_reference: str | None = None

    @property
    def unit(self) -> str:
        return "goodput tok/s" if self.targets else "output tok/s"

    def load_words(self) -> str:
        if self.kind == "max_goodput":
            return "the load where the reference serves the most goodput under the SLO"
        if self.kind == "load":
            load = f"concurrency {self.concurrency}" if self.concurrency else f"{self.request_rate:g} requests/s"
            if self.by_reference == "best":
                return (f"{load} (where the reference serves the most goodput among the loads whose percentile "
                        "estimates meet the SLO)")
            if self.by_reference == "none":
                return f"{load} (the reference meets the SLO at no load measured: its lowest is read)"
            return load
        return f"in {self.scenario or 'no scenario'}"

    def words(self) -> str:
        """'at p90 TPOT ≤ 50 ms and p90 TTFT ≤ 2000 ms, concurrency 8' (the recommendation line's prefix); 'in
        single' where the matrix names a scenario and no SLO."""
        slo = slo_words(self.targets)
        load = self.load_words()
        return f"at {slo}, {load}" if slo else (load if self.kind == "scenario" else f"at {load}")


def operating_point(matrix: dict) -> OperatingPoint:
    """The matrix's operating point (a validated matrix's model_dump(mode="json"), as results.json keeps it)."""
    report = matrix.get("report") or {}
    throughput = matrix.get("throughput") or {}
    scenarios = throughput.get("scenarios") or []
    # the length section's per-bucket scenarios (issue 39) describe speed by length: the headline is read at one of
    # the matrix's own scenarios where it has any
    sweep = (throughput.get("sweep") or {})
    own = [s for s in scenarios if not s["name"].startswith(LENGTH_SCENARIO_PREFIX)]
    scenarios = own if own or sweep else scenarios
    targets = targets_of(matrix)
    spec = report.get("operating_point") or None
    spec = {"max_goodput": True} if spec == "max_goodput" else spec  # as written in a matrix file
    sweep_name = sweep.get("name", "load") if sweep else None
    if spec and spec.get("max_goodput"):
        return OperatingPoint("max_goodput", targets=targets, sweep=sweep_name)
    if spec:
        return OperatingPoint("load", concurrency=spec.get("concurrency"), request_rate=spec.get("request_rate"),
                              targets=targets, sweep=sweep_name)
    wanted = report.get("throughput_scenario")
    if not wanted:
        single = [s["name"] for s in scenarios if s.get("concurrency") == 1]
        steps = sweep_steps_names(sweep)
        wanted = single[0] if single else (scenarios[0]["name"] if scenarios else (steps[0] if steps else None))
    return OperatingPoint("scenario", scenario=wanted, targets=targets, sweep=sweep_name)


def sweep_steps_names(sweep: dict) -> list[str]:
    """The step names a sweep (as results.json keeps it) measures, in order."""
    return [step.name for step in SweepSection.model_validate(sweep).steps()] if sweep else []


@dataclass(frozen=True)
class CellFigure:
    """One cell's speed at the operating point."""

    scenario: str | None  # the scenario or step it was read at (None: no step meets the SLO)
    value: float  # the kept repeats' mean figure (tok/s or goodput tok/s)
    side: Side  # every repeat's figure, for the speed rule
    slo: StepSlo | None = None
    meets: bool | None = None  # None: no SLO
    concurrency: int | None = None
    request_rate: float | None = None

    def range(self) -> tuple[float, float] | None:
        """(lowest, highest) of the kept repeats (a disturbed one is never a cell's figure); None with one."""
        rates = kept_rates(self.side)
        return (min(rates), max(rates)) if len(rates) > 1 else None


def goodput_side(figures: list[RepeatFigures], targets: tuple[Target, ...], plan: tuple[int, int] | None) -> Side:
    """Repeats as one side of the speed rule on goodput tok/s (a repeat with no good request at ZERO_GOODPUT), each
    with the host's reason it was disturbed: the same repeats the throughput side keeps or sets aside."""
    rates = []
    for f in figures:
        good = repeat_goodput(f, targets)
        rates.append(max(good[1] if good is not None else 0.0, ZERO_GOODPUT))
    return Side(tuple(rates), tuple(f.disturbed for f in figures), plan)


def figure_of(sc: ScenarioResult, targets: tuple[Target, ...]) -> CellFigure:
    """A scenario's figure: its throughput, or with targets its goodput, per repeat."""
    side = side_of(sc)
    if not targets:
        return CellFigure(sc.name, sc.output_tok_s, side, concurrency=sc.concurrency, request_rate=sc.request_rate)
    slo = step_slo(sc, targets, kept_indices(side))
    if slo is None:  # no per-request figures (a run before issue 38): no goodput to read
        return CellFigure(sc.name, sc.output_tok_s, side, concurrency=sc.concurrency, request_rate=sc.request_rate)
    on_goodput = goodput_side(sc.repeat_figures, targets, side.plan) if len(sc.repeat_figures) == len(
        side.rates) else Side((max(slo.goodput_tok_s, ZERO_GOODPUT),))
    return CellFigure(sc.name, slo.goodput_tok_s, on_goodput, slo=slo, meets=slo.met, concurrency=sc.concurrency,
                      request_rate=sc.request_rate)


def steps_of(throughput: list[ScenarioResult], point: OperatingPoint) -> list[ScenarioResult]:
    """The sweep's measured steps of one cell, in load order."""
    if not point.sweep:
        return []
    prefix = f"{point.sweep}-"
    steps = [s for s in throughput if s.name.startswith(prefix) and s.output_tok_s > 0]
    return sorted(steps, key=lambda s: (s.concurrency or 0, s.request_rate or 0))


def resolve(point: OperatingPoint, reference: list[ScenarioResult]) -> OperatingPoint:
    """A max_goodput point made a load: the reference's sweep step with the most goodput among those meeting the SLO
    (its percentiles' estimates within the targets), else its lowest step; other points unchanged."""
    if point.kind != "max_goodput":
        return point
    steps = steps_of([s for s in reference if s.output_tok_s > 0], point)
    if not steps:
        return point
    figures = [(figure_of(s, point.targets), s) for s in steps]
    meeting = [(f, s) for f, s in figures if f.meets]
    best, how = (max(meeting, key=lambda fs: fs[0].value)[1], "best") if meeting else (steps[0], "none")
    return OperatingPoint("load", concurrency=best.concurrency, request_rate=best.request_rate,
                          targets=point.targets, sweep=point.sweep, by_reference=how)


def figure_at(throughput: list[ScenarioResult], point: OperatingPoint) -> CellFigure | None:
    """One cell's figure at the operating point (a max_goodput point resolved first, `resolve`: unresolved, against
    this cell's own steps); None where it did not measure there."""
    measured = [s for s in throughput if s.output_tok_s > 0]
    point = resolve(point, measured)
    if point.kind == "scenario":
        sc = next((s for s in measured if s.name == point.scenario), None)
        return None if sc is None else figure_of(sc, point.targets)
    if point.kind == "max_goodput":
        return None  # no sweep step measured
    at_load = [s for s in measured if (s.concurrency == point.concurrency if point.concurrency
                                       else s.request_rate == point.request_rate)]
    # a sweep step before a scenario of the same load: the sweep is what the operating point was declared on
    at_load.sort(key=lambda s: not (point.sweep and s.name.startswith(f"{point.sweep}-")))
    return figure_of(at_load[0], point.targets) if at_load else None


def reach(throughput: list[ScenarioResult], point: OperatingPoint) -> str | None:
    """The highest sweep load at which a cell meets the SLO (at the estimates), in words; None without an SLO or a
    sweep: how far its capacity reaches, reported beside the decision, not deciding."""
    if not point.targets:
        return None
    steps = steps_of(throughput, point)
    if not steps:
        return None
    meeting = [s for s in steps if figure_of(s, point.targets).meets]
    return _load_text(meeting[-1]) if meeting else "none"


def verdict_of(mine: CellFigure | None, theirs: CellFigure | None) -> SpeedVerdict | None:
    """The speed rule between two figures; a side meeting the SLO nowhere is slower than one that meets it."""
    if mine is None or theirs is None:
        return None
    if mine.meets is False and mine.value <= 0:
        if theirs.meets is False and theirs.value <= 0:
            return SpeedVerdict(ratio=math.nan, outcome="undecided", notes=("no request of either side meets the "
                                                                            "SLO",))
        return SpeedVerdict(ratio=0.0, outcome="slower", low=0.0, high=0.0,
                            notes=("no request meets the SLO there",))
    if theirs.meets is False and theirs.value <= 0:
        return SpeedVerdict(ratio=math.inf, outcome="faster", low=math.inf, high=math.inf,
                            notes=("no request of the reference meets the SLO there",))
    return speedup(mine.side, theirs.side)


def verdict_between(mine: list[ScenarioResult], theirs: list[ScenarioResult],
                    point: OperatingPoint) -> SpeedVerdict | None:
    """Is a cell faster than the reference at the operating point? (each side's throughput records)"""
    point = resolve(point, theirs)
    return verdict_of(figure_at(mine, point), figure_at(theirs, point))


@dataclass(frozen=True)
class StepVerdict:
    load: str  # 'c=8' or '2/s'
    concurrency: int | None
    request_rate: float | None
    verdict: SpeedVerdict
    name: str = ""  # the step's scenario name ('load-c8')


def _load_text(sc: ScenarioResult) -> str:
    return f"c={sc.concurrency}" if sc.concurrency else f"{sc.request_rate:g}/s"


def step_verdicts(mine: list[ScenarioResult], theirs: list[ScenarioResult],
                  point: OperatingPoint) -> list[StepVerdict]:
    """The speed rule at every sweep step both sides measured, on output tok/s, in load order. Not on goodput: at a
    load past the SLO a repeat's goodput is a handful of requests or none, and a ratio of such figures says nothing
    (the demo's 16 streams: 282x [0.02–3.4e6]); whether each side meets the SLO there is reported beside it."""
    by_name = {s.name: s for s in steps_of(theirs, point)}
    out = []
    for sc in steps_of(mine, point):
        ref = by_name.get(sc.name)
        if ref is None:
            continue
        verdict = verdict_of(figure_of(sc, ()), figure_of(ref, ()))
        if verdict is not None:
            out.append(StepVerdict(_load_text(sc), sc.concurrency, sc.request_rate, verdict, sc.name))
    return out


def crossover(steps: list[StepVerdict]) -> str | None:
    """'faster at c=1 (1.42x [1.30–1.55]), slower at c=8 (0.81x [0.75–0.88]): it turns between c=2 and c=8'; None
    where the rule does not call the cell faster at one step and slower at another."""
    decided = [s for s in steps if s.verdict.outcome in ("faster", "slower")]
    if len({s.verdict.outcome for s in decided}) < 2:
        return None
    first = decided[0]
    turn = next(s for s in decided if s.verdict.outcome != first.verdict.outcome)
    before = [s for s in steps if steps.index(s) < steps.index(turn)]
    last_same = [s for s in before if s.verdict.outcome == first.verdict.outcome][-1]
    return (f"{first.verdict.outcome} at {first.load} ({first.verdict.text()}), {turn.verdict.outcome} at "
            f"{turn.load} ({turn.verdict.text()}): it turns between {last_same.load} and {turn.load}")


@dataclass(frozen=True)
class CurvePoint:
    """One sweep step of one cell on the throughput-interactivity chart (per GPU: the cell's tensor x pipeline x
    data parallel sizes, 1 without them)."""

    step: str
    concurrency: int | None
    request_rate: float | None
    tok_s_per_gpu: float  # the kept repeats' mean output tok/s over the GPUs
    low: float | None  # its 90% interval (t on the repeats' log rates; None with one kept repeat)
    high: float | None
    per_user: float | None  # interactivity: the median request's decode tokens/s
    goodput_per_gpu: float | None  # under the SLO (None: no SLO)
    meets: bool | None


@dataclass(frozen=True)
class Curve:
    cell: str
    reference: bool
    gpus: int
    points: tuple[CurvePoint, ...]
    stopped: str | None  # why the sweep ended where it did (saturation), from the last step's record


def mean_interval(rates: list[float], confidence: float = 0.90) -> tuple[float | None, float | None]:
    """The geometric mean's t interval from repeats (None, None with fewer than two)."""
    logs = [math.log(r) for r in rates if r > 0]
    if len(logs) < 2:
        return None, None
    from scipy import stats

    centre = sum(logs) / len(logs)
    sd = math.sqrt(sum((v - centre) ** 2 for v in logs) / (len(logs) - 1))
    half = float(stats.t.ppf(0.5 + confidence / 2, len(logs) - 1)) * sd / math.sqrt(len(logs))
    return math.exp(centre - half), math.exp(centre + half)


def curve_of(cid: str, throughput: list[ScenarioResult], point: OperatingPoint, *, gpus: int,
             reference: bool) -> Curve | None:
    """One cell's sweep as a curve (None: it measured no step)."""
    steps = steps_of(throughput, point)
    if not steps:
        return None
    out = []
    for sc in steps:
        kept = kept_rates(side_of(sc)) or [sc.output_tok_s]
        low, high = mean_interval(kept)
        figure = figure_of(sc, point.targets) if point.targets else None
        out.append(CurvePoint(sc.name, sc.concurrency, sc.request_rate, sc.output_tok_s / gpus,
                              None if low is None else low / gpus, None if high is None else high / gpus,
                              sc.request_decode_tok_s.p50, None if figure is None else figure.value / gpus,
                              None if figure is None else figure.meets))
    return Curve(cid, reference, gpus, tuple(out), steps[-1].stopped)
