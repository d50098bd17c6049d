"""The one rule that says whether one configuration is faster than another: the ratio of a throughput scenario's
output tokens/s between two sides' repeats, with an interval, decided at a floor. The Pareto front, "vs reference",
screening, the recommendation, the gate, compare and the runner's adaptive repeats all ask it (pure: repeats in,
a verdict out; benchmarks/speed_verdicts.py measures its errors).

- **Estimate and interval**: the ratio of the geometric means of each side's kept repeats (below), with Welch's t
  interval of the difference of mean logs (analysis/stats.py `log_ratio_interval`, statsmodels' CompareMeans with
  `usevar="unequal"`, USEVAR): a cell may spread more than its reference (the demo's ngram cell at one stream 7.5%
  against 1.0%), and pooling the two spreads then called a cell truly 1.05x "faster" in 12.7% of 2,000 runs at 3
  against 5 repeats (issue 57). Where one side ran once, the repeating side's spread stands for both, so the
  unrepeated side's noise is counted, not ignored. Two-sided at 1 - 2 level: its ends are one-sided bounds at
  `level`, and the printed interval says its confidence ('[99.1%: 1.10–1.24]').
- **Floor**: cells run minutes apart, and runs drift more than repeats spread (the demo run twice on one machine
  moved a cell's single-stream figure by 3% with each run's three repeats within 1%), so no ratio within FLOOR of 1
  is ever called a difference. Outcomes: **faster** when the lower bound is above 1 + FLOOR (credibly faster by the
  floor at least), **slower** when the upper bound is below 1 / (1 + FLOOR), **equal** when the interval lies within
  both, **undecided** otherwise (also when neither side repeated: no noise is known). `not_faster` (the upper bound
  below 1 + FLOOR) is what screening asks: the cell is credibly not worth shipping for its speed.
- **Disturbed repeats** are those the host sampler flagged (other processes' CPU, steal, other processes on the
  GPU: records' `RepeatFigures.disturbed`); they are set aside while at least two clean repeats remain on that
  side; with fewer they are kept, and the verdict says it rests on them. The runner measures a set-aside repeat
  again (runner/speedloop.py). Nothing is set aside for its own value or its own streams: a repeat far below its
  side's others on a quiet host, or one whose streams stalled, is the engine's own behaviour (an engine whose stalls
  come and go), and leaving it out is selection (clean repeats with a value-based set-aside: false "faster" at the
  floor 5.05 -> 6.50%, issue 57). Such a repeat is kept and counted a `suspect`: the runner measures on while one
  stands, and the verdict says it rests on one.
- **Looks**: the runner evaluates the rule after each repeat between a scenario's `repeats.min` (at least
  FIRST_LOOK: with two repeats Welch's degrees of freedom fall to about 1.7 and nothing could be decided, so no
  alpha is spent there) and `repeats.max` and stops when it is decided. Each look tests at the alpha an
  O'Brien-Fleming-like spending function spends (analysis/sequential.py, the quality looks' rule), so looking
  after every repeat keeps the error of ever calling a difference at most the design's alpha; the final verdict is
  tested at the level of the look it stopped at.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Literal, Sequence

from evalharness.analysis.sequential import look_levels
from evalharness.analysis.stats import confidence_text, log_ratio_interval
from evalharness.records.measures import ScenarioResult

FLOOR = 0.05  # the between-run floor: a ratio within 5% of 1 is never a difference
ALPHA = 0.05  # one-sided, per direction: the bounds are 95% bounds, the interval printed a 90% one
# a kept repeat more than this far below its side's best (or OUTLIER_SIGMAS robust deviations, where the side spreads
# more: outlier_gap) is a suspect: kept in the estimate, measured past. Quiet single-stream repeats of the float32
# CPU engine spread 8% (CV over 14 repeats, two launches, 2026-12-03: benchmarks/data/speed_repeats.json); the
# disturbed ones seen were 36% (a CPU hog in bursts: 9.8 against 15.2 and 15.5 tok/s) and 80% (a busy minute: 3.6
# against 18) below
OUTLIER_DROP = 0.25
OUTLIER_SIGMAS = 3.0
MIN_CLEAN = 2  # clean repeats a side needs for its disturbed ones to be set aside
USEVAR = "unequal"  # Welch: each side's own spread (module docstring)
FIRST_LOOK = 3  # kept repeats of a cell before its first look in an adaptive plan

Outcome = Literal["faster", "slower", "equal", "undecided"]


@dataclass(frozen=True)
class Side:
    """One side's repeats of a scenario: each repeat's output tok/s and why it was disturbed ('' for a clean one)."""

    rates: tuple[float, ...]
    disturbed: tuple[str, ...] = ()
    plan: tuple[int, int] | None = None  # (min, max) repeats the scenario planned (None: a fixed design)

    def reasons(self) -> tuple[str, ...]:
        return self.disturbed if len(self.disturbed) == len(self.rates) else ("",) * len(self.rates)


def side_of(sc: ScenarioResult) -> Side:
    """A scenario's record as one side of the rule: its repeats (or its one figure) and their disturbances."""
    if sc.repeat_figures:
        return Side(tuple(r.tok_s for r in sc.repeat_figures), tuple(r.disturbed for r in sc.repeat_figures),
                    tuple(sc.repeat_plan) if sc.repeat_plan else None)  # type: ignore[arg-type]
    rates = tuple(sc.repeat_tok_s) if len(sc.repeat_tok_s) > 1 else (sc.output_tok_s,)
    return Side(rates)


def outlier_gap(rates: Sequence[float]) -> float:
    """How far (in log rate) below its side's others a repeat must lie to be judged disturbed by its own figure:
    OUTLIER_DROP, or OUTLIER_SIGMAS robust standard deviations of the side's log rates (1.4826 MAD) where the side is
    noisier than that makes room for. A speculative cell's repeats spread with its acceptance, prompt by prompt
    (the demo's ngram cell, 2026-12-03: clean repeats 17.1-25.6 tok/s, 13% robust CV): a fixed 25% set its lowest
    clean repeat aside."""
    logs = [math.log(r) for r in rates if r > 0]
    if len(logs) < 3:
        return -math.log(1 - OUTLIER_DROP)
    centre = _median(logs)
    spread = 1.4826 * _median([abs(v - centre) for v in logs])
    return max(-math.log(1 - OUTLIER_DROP), OUTLIER_SIGMAS * spread)


def set_aside(side: Side) -> dict[int, str]:
    """The repeats the estimate leaves out, by index, and why: those the host sampler flagged, while MIN_CLEAN clean
    ones remain (never a repeat for its own figure: module docstring)."""
    reasons = side.reasons()
    clean = [i for i, why in enumerate(reasons) if not why]
    return {i: why for i, why in enumerate(reasons) if why} if len(clean) >= MIN_CLEAN else {}


def suspects(side: Side) -> int:
    """Kept repeats far below the side's best kept one (outlier_gap). A verdict with suspects is not acted on while
    repeats can still be added: one more repeat tells a passing disturbance from the engine's own spread."""
    kept = kept_rates(side)
    if not kept or max(kept) <= 0:
        return 0
    gap = outlier_gap(kept)
    return sum(1 for r in kept if r <= 0 or math.log(max(kept) / r) > gap)


def kept_indices(side: Side) -> list[int]:
    """The repeats the speed rule keeps, by index: the one answer to "which repeats count" that every figure of a
    side (its tok/s, goodput, percentiles, the verdict) is read from."""
    aside = set_aside(side)
    return [i for i in range(len(side.rates)) if i not in aside]


def kept_rates(side: Side) -> list[float]:
    return [side.rates[i] for i in kept_indices(side)]


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def first_look(plan: tuple[int, int]) -> int:
    """The kept repeats of a cell at its first look: the plan's minimum, at least FIRST_LOOK where the maximum
    allows."""
    return max(plan[0], min(FIRST_LOOK, plan[1]))


@functools.lru_cache(maxsize=4096)  # a handful of plans per run; the benchmark asks hundreds of thousands of times
def level_at(plan: tuple[int, int] | None, reached: int, alpha: float = ALPHA) -> float:
    """The one-sided level a verdict after `reached` kept repeats tests at: a fixed design's alpha, or with looks
    after each repeat from the first look (`first_look`) to plan's max, what the spending function spends at that
    look."""
    if plan is None or first_look(plan) >= plan[1]:
        return alpha
    start = first_look(plan)
    looks = list(range(start, plan[1] + 1))
    index = min(max(reached, start), plan[1]) - start
    levels = look_levels(2 * alpha, looks)  # two-sided spending; each direction gets half
    return levels[index] / 2


@dataclass(frozen=True)
class SpeedVerdict:
    ratio: float  # cell over reference (geometric means of the kept repeats)
    outcome: Outcome
    low: float | None = None  # the one-sided `level` bounds (None: no noise known)
    high: float | None = None
    level: float = ALPHA
    kept: tuple[int, int] = (0, 0)  # repeats in the estimate: (cell, reference)
    set_aside: tuple[int, int] = (0, 0)  # repeats left out as disturbed
    resting: tuple[int, int] = (0, 0)  # disturbed repeats kept (too few clean ones to leave them out)
    suspect: tuple[int, int] = (0, 0)  # kept repeats far below their side's best (see `suspects`)
    notes: tuple[str, ...] = field(default=())

    @property
    def not_faster(self) -> bool:
        """Credibly not faster by the floor: the upper bound below 1 + FLOOR (screening's question)."""
        return self.high is not None and self.high < 1 + FLOOR

    @property
    def faster(self) -> bool:
        return self.outcome == "faster"

    @property
    def confidence(self) -> float:
        """The two-sided interval's confidence: its ends are the one-sided bounds at `level`."""
        return 1 - 2 * self.level

    def interval_text(self) -> str:
        """'[99.1%: 1.10–1.24]': the level beside the ends, since a look's level is not the table's."""
        if self.low is None or self.high is None:
            return ""
        return f"[{confidence_text(self.confidence)}: {self.low:.2f}–{self.high:.2f}]"

    def text(self) -> str:
        """'1.48x [90%: 1.31–1.67] faster', with what it rests on when disturbed repeats are in it."""
        if self.notes and (not math.isfinite(self.ratio) or self.ratio == 0):  # an SLO met on one side only
            return f"{self.outcome}: {'; '.join(self.notes)}"
        if not math.isfinite(self.ratio):  # a side without a positive rate: nothing to divide
            return f"{self.outcome}: no positive rate on both sides (a scenario that delivered no tokens)"
        parts = [f"{self.ratio:.2f}x", self.interval_text(), self.outcome if self.low is not None else
                 "undecided (measured once: no noise known)"]
        if any(self.resting):
            parts.append(f"(rests on {sum(self.resting)} disturbed repeat{'s' if sum(self.resting) > 1 else ''})")
        elif any(self.suspect):
            parts.append(f"(rests on {sum(self.suspect)} repeat{'s' if sum(self.suspect) > 1 else ''} far below "
                         "the best of its side)")
        return " ".join(p for p in parts if p)


def speedup(cell: Side, reference: Side, *, level: float | None = None, floor: float = FLOOR) -> SpeedVerdict:
    """Is `cell` faster than `reference`? The verdict at `level` (default: the level of the look the cell's repeats
    reached, level_at)."""
    c_aside, r_aside = set_aside(cell), set_aside(reference)
    c, r = kept_rates(cell), kept_rates(reference)
    resting = (sum(1 for i, why in enumerate(cell.reasons()) if why and i not in c_aside),
               sum(1 for i, why in enumerate(reference.reasons()) if why and i not in r_aside))
    level = level_at(cell.plan, len(c)) if level is None else level
    common = dict(level=level, kept=(len(c), len(r)), set_aside=(len(c_aside), len(r_aside)), resting=resting,
                  suspect=(suspects(cell), suspects(reference)))
    if not c or not r or min(c + r) <= 0:
        return SpeedVerdict(ratio=math.nan, outcome="undecided", **common)
    interval = log_ratio_interval(r, c, confidence=1 - 2 * level, usevar=USEVAR)
    if interval is None:  # neither side repeated: no noise known
        ratio = math.exp(sum(map(math.log, c)) / len(c) - sum(map(math.log, r)) / len(r))
        return SpeedVerdict(ratio=ratio, outcome="undecided", **common)
    ratio, low, high = interval
    if low > 1 + floor:
        outcome: Outcome = "faster"
    elif high < 1 / (1 + floor):
        outcome = "slower"
    elif low >= 1 / (1 + floor) and high <= 1 + floor:
        outcome = "equal"
    else:
        outcome = "undecided"
    return SpeedVerdict(ratio=ratio, outcome=outcome, low=low, high=high, **common)


def decided(verdict: SpeedVerdict) -> bool:
    """Nothing more repeats could change about what the harness does with the cell: faster, slower or equal, or
    credibly not faster by the floor (screened either way), resting on no disturbed or suspect repeat."""
    if any(verdict.resting) or any(verdict.suspect):
        return False
    return verdict.outcome != "undecided" or verdict.not_faster


def scenario_verdict(cell: ScenarioResult | None, reference: ScenarioResult | None) -> SpeedVerdict | None:
    """The rule between two scenario records (None where either is missing or measured nothing)."""
    if cell is None or reference is None or cell.output_tok_s <= 0 or reference.output_tok_s <= 0:
        return None
    return speedup(side_of(cell), side_of(reference))
