"""Goodput under a latency SLO, and latency percentiles with their intervals (pure: records in, figures out).

- **A good request** meets every target of the SLO: its time to first token, its time per output token after the
  first, its end-to-end time, each at most the target (DistServe's definition, as vLLM's bench `--goodput` and AIPerf
  count it). A failed request is never good.
- **Goodput** of a repeat: its good requests per second of the repeat's wall time, and their output tokens per
  second. Per repeat, so the speed rule (analysis/speed.py) puts its interval on goodput as on throughput.
- **A step meets the SLO** when, for each target, its percentile over the kept repeats' requests is within the
  target (p90 TPOT <= 50 ms: at least 90% of the requests had a TPOT of 50 ms or less). Judged at the estimate, and
  said so where the percentile's interval reaches past the target (`StepSlo.words`).
- **A percentile comes from the repeats**, not from the pooled requests: the requests of one repeat share its
  batches and its host minute, so they are not independent draws (a 5% repeat effect under 0.5% request noise, 5
  repeats of 16: scipy's order-statistic interval over the pooled requests covered 10.7% of a nominal 90%, issue
  57). Where every repeat holds enough requests for a percentile of its own (1 / (1 - p): 10 for a p90), the figure
  is a run's percentile as vLLM's and SGLang's bench clients report it, one per repeat, and their mean with a t
  interval over the repeats (90% covered 88-91% in tests/unit/analysis/test_operating_point.py's cases). Where
  repeats are smaller (one request a stream at low load), the repeats' requests are pooled and the interval is a
  bootstrap over whole repeats (REPEAT_RESAMPLES, seeded, so a report re-renders the same). One repeat has no
  interval; where even the slowest of the requests could not bound the percentile above (p^n above the tail: a p99
  of 100 requests), it is open above and printed as such.
Must not import phases, serving, the runner or rendering.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from evalharness.records.measures import RepeatFigures, ScenarioResult

COLUMN = {"ttft": 0, "tpot": 1, "e2e": 2}  # RepeatFigures.per_request's columns
LABEL = {"ttft": "TTFT", "tpot": "TPOT", "e2e": "end-to-end"}
CONFIDENCE = 0.90
REPEAT_RESAMPLES = 999  # the bootstrap over repeats: its 5% and 95% ends move by about 1% of the spread at 999
FAILED = 1e9  # seconds: where a failed request (or one without the figure) enters a percentile


@dataclass(frozen=True)
class Target:
    metric: str  # ttft | tpot | e2e
    percentile: float
    max_s: float

    def words(self) -> str:
        return f"p{self.percentile:g} {LABEL[self.metric]} ≤ {self.max_s * 1000:g} ms"


def targets_of(matrix: dict) -> tuple[Target, ...]:
    """The SLO of a matrix as results.json keeps it (report.slo), TTFT first."""
    slo = (matrix.get("report") or {}).get("slo") or {}
    return tuple(Target(metric, float(t.get("percentile", 90)), float(t["max_ms"]) / 1000)
                 for metric, t in sorted(slo.items(), key=lambda kv: list(COLUMN).index(kv[0])))


def slo_words(targets: Sequence[Target]) -> str:
    return " and ".join(t.words() for t in targets)


def is_good(row: Sequence[float | None], targets: Sequence[Target]) -> bool:
    """Does one request ([ttft_s, tpot_s, e2e_s, tokens]) meet every target? A missing figure (a failed request, or a
    TPOT of a one-token answer) meets no target it is asked for."""
    for t in targets:
        value = row[COLUMN[t.metric]]
        if value is None or value > t.max_s:
            return False
    return True


def repeat_goodput(figures: RepeatFigures, targets: Sequence[Target]) -> tuple[float, float] | None:
    """(good requests/s, good output tokens/s) of one repeat; None where the repeat kept no per-request figures
    (runs before issue 38) or lasted no time."""
    if not figures.per_request or figures.seconds <= 0:
        return None
    good = [row for row in figures.per_request if is_good(row, targets)]
    return len(good) / figures.seconds, sum(float(row[3] or 0) for row in good) / figures.seconds


@dataclass(frozen=True)
class PercentileFigure:
    target: Target
    value: float | None  # seconds (None: no request had the figure)
    low: float | None  # the 90% interval's ends over the repeats (None: open, or one repeat)
    high: float | None
    n: int  # requests
    repeats: int = 1

    @property
    def within(self) -> bool:
        return self.value is not None and self.value <= self.target.max_s

    @property
    def surely_within(self) -> bool:
        """The whole interval within the target, not only the estimate."""
        return self.high is not None and self.high <= self.target.max_s

    def text(self) -> str:
        """'48.1 ms [90%: 41.0–52.3]', '48.1 ms [90%: 41.0–open] (16 requests cannot bound a p90 above)', '48.1 ms
        (one repeat: no interval)'."""
        if self.value is None:
            return "no figure"
        if self.value >= FAILED:
            return "beyond every target (failed requests)"
        ms = lambda v: "open" if v is None or v >= FAILED else f"{v * 1000:.1f}"  # noqa: E731
        if self.repeats < 2:
            return f"{self.value * 1000:.1f} ms (one repeat: no interval)"
        text = f"{self.value * 1000:.1f} ms [{CONFIDENCE:.0%}: {ms(self.low)}–{ms(self.high)}]"
        if self.high is None or self.high >= FAILED:
            text += f" ({self.n} requests cannot bound a p{self.target.percentile:g} above)"
        return text


def _t_interval(values: np.ndarray) -> tuple[float, float]:
    from scipy import stats

    half = float(stats.t.ppf((1 + CONFIDENCE) / 2, len(values) - 1)) * float(np.std(values, ddof=1)) / np.sqrt(
        len(values))
    return float(values.mean()) - half, float(values.mean()) + half


def _weighted_percentiles(values: np.ndarray, weights: np.ndarray, q: float) -> np.ndarray:
    """Per row of `weights` (resamples x values, `values` sorted), the smallest value whose cumulative weight
    reaches q of the row's total (the inverted-CDF percentile of the resample)."""
    cumulative = np.cumsum(weights, axis=1)
    index = (cumulative < q * cumulative[:, -1:]).sum(axis=1)
    return values[np.minimum(index, len(values) - 1)]


def percentile_figure(groups: Sequence[Sequence[float]], target: Target) -> PercentileFigure:
    """The target's percentile of repeats' values (`groups`: one list of request figures a repeat; numpy's linear
    interpolation, as records/measures.py) with its interval over the repeats (module docstring)."""
    groups = [list(g) for g in groups if len(g)]
    pooled = np.asarray([v for g in groups for v in g], dtype=float)
    if not len(pooled):
        return PercentileFigure(target, None, None, None, 0, 0)
    q = target.percentile / 100
    if len(groups) >= 2 and q < 1 and min(map(len, groups)) >= 1 / (1 - q):
        per = np.asarray([np.percentile(g, target.percentile) for g in groups])
        if per.max() >= FAILED:
            return PercentileFigure(target, FAILED, None, None, len(pooled), len(groups))
        low, high = _t_interval(per)
        return PercentileFigure(target, float(per.mean()), low, high, len(pooled), len(groups))
    value = float(np.percentile(pooled, target.percentile))
    if len(groups) < 2:
        return PercentileFigure(target, value, None, None, len(pooled), len(groups))
    order = np.argsort(pooled, kind="stable")
    owner = np.repeat(np.arange(len(groups)), [len(g) for g in groups])[order]
    rng = np.random.default_rng(0)
    counts = rng.multinomial(len(groups), [1 / len(groups)] * len(groups), size=REPEAT_RESAMPLES)
    resampled = _weighted_percentiles(pooled[order], counts[:, owner], q)
    low, high = (float(v) for v in np.quantile(resampled, [(1 - CONFIDENCE) / 2, (1 + CONFIDENCE) / 2]))
    if q ** len(pooled) > (1 - CONFIDENCE) / 2:  # even independent requests' slowest could not bound it above
        high = None
    return PercentileFigure(target, value, low, high, len(pooled), len(groups))


def requests_for(targets: Sequence[Target]) -> int:
    """The fewest requests whose percentile each target's can be estimated from: 1 / (1 - p) (10 for a p90, 100 for a
    p99); a p100 is any request's figure."""
    return max((math.ceil(1 / (1 - t.percentile / 100) - 1e-9) if t.percentile < 100 else 1 for t in targets),
               default=1)


def repeat_percentile(sc: ScenarioResult, kept: Sequence[int], target: Target,
                      failed: float | None = None) -> PercentileFigure:
    """The target's percentile over the kept repeats' requests, its interval over those repeats; `failed`: the
    seconds a request without the figure enters as (None: left out)."""
    groups = []
    for i in kept:
        if i < len(sc.repeat_figures):
            column = [row[COLUMN[target.metric]] for row in sc.repeat_figures[i].per_request]
            groups.append([float(v) for v in column if v is not None] +
                          ([failed] * sum(1 for v in column if v is None) if failed is not None else []))
    return percentile_figure(groups, target)


@dataclass(frozen=True)
class StepSlo:
    """One scenario (a sweep step) against the SLO, over its kept repeats."""

    percentiles: tuple[PercentileFigure, ...]
    good: int  # requests meeting every target
    total: int
    goodput_rps: float  # mean over the kept repeats
    goodput_tok_s: float
    repeat_goodput_tok_s: tuple[float, ...]  # every repeat's, in order (set-aside ones included)

    @property
    def met(self) -> bool:
        """Every percentile's estimate within its target (the interval may reach past it: `words`)."""
        return all(p.within for p in self.percentiles)

    @property
    def surely_met(self) -> bool:
        """Every percentile's whole interval within its target, not only its estimate."""
        return all(p.surely_within for p in self.percentiles)

    def short_words(self) -> str:
        """A table cell: 'meets', 'meets at the estimate', '**misses**'."""
        return "meets" if self.surely_met else "meets at the estimate" if self.met else "**misses**"

    def words(self) -> str:
        """'meets the SLO', 'meets the SLO at the estimate (the 90% interval of p90 TTFT reaches past 1000 ms)',
        'misses p90 TTFT ≤ 1000 ms'."""
        missed = [p.target.words() for p in self.percentiles if not p.within]
        if missed:
            return "misses " + " and ".join(missed)
        unsure = [p for p in self.percentiles if not p.surely_within]
        if not unsure:
            return "meets the SLO"
        return ("meets the SLO at the estimate (the " + " and ".join(
            f"{CONFIDENCE:.0%} interval of p{p.target.percentile:g} {LABEL[p.target.metric]}" for p in unsure)
            + f" reach{'es' if len(unsure) == 1 else ''} past the target)")


def step_slo(sc: ScenarioResult, targets: Sequence[Target], kept: Sequence[int] | None = None) -> StepSlo | None:
    """The step's SLO figures over its kept repeats (`kept`: their indices; default every repeat); None without a
    target or without per-request figures."""
    figures = sc.repeat_figures
    if not targets or not figures or not any(f.per_request for f in figures):
        return None
    indices = list(range(len(figures))) if kept is None else [i for i in kept if i < len(figures)]
    rows = [row for i in indices for row in figures[i].per_request]
    per_repeat = [repeat_goodput(f, targets) for f in figures]
    chosen = [per_repeat[i] for i in indices if per_repeat[i] is not None]
    # a failed request counts as beyond every target: it enters the percentile as FAILED seconds
    percentiles = [repeat_percentile(sc, indices, t, failed=FAILED) for t in targets]
    return StepSlo(percentiles=tuple(percentiles), good=sum(1 for row in rows if is_good(row, targets)),
                   total=len(rows),
                   goodput_rps=sum(g[0] for g in chosen) / len(chosen) if chosen else 0.0,
                   goodput_tok_s=sum(g[1] for g in chosen) / len(chosen) if chosen else 0.0,
                   repeat_goodput_tok_s=tuple(0.0 if g is None else g[1] for g in per_repeat))
