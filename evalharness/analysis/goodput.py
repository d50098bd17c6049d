"""Goodput under a latency SLO, and latency percentiles with their intervals (pure: records in, figures out).

- **A good request** meets every target of the SLO: its time to first token, its time per output token after the
  first, its end-to-end time, each at most the target (DistServe's definition, as vLLM's bench `--goodput` and AIPerf
  count it). A failed request is never good.
- **Goodput** of a repeat: its good requests per second of the repeat's wall time, and their output tokens per
  second. Per repeat, so the speed rule (analysis/speed.py) puts its interval on goodput as on throughput.
- **A step meets the SLO** when, for each target, its percentile over the kept repeats' requests is within the
  target (p90 TPOT <= 50 ms: at least 90% of the requests had a TPOT of 50 ms or less). Judged at the estimate; the
  printed percentile carries a distribution-free 90% interval from order statistics (scipy.stats.quantile_test):
  with few requests a high percentile is the slowest request and its interval is open above, which is printed as
  such rather than hidden.
Must not import phases, serving, the runner or rendering.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import stats

from evalharness.records.measures import RepeatFigures, ScenarioResult

COLUMN = {"ttft": 0, "tpot": 1, "e2e": 2}  # RepeatFigures.per_request's columns
LABEL = {"ttft": "TTFT", "tpot": "TPOT", "e2e": "end-to-end"}
CONFIDENCE = 0.90
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
    low: float | None  # the 90% interval's ends (None: open, too few requests to bound it)
    high: float | None
    n: int

    @property
    def within(self) -> bool:
        return self.value is not None and self.value <= self.target.max_s

    def text(self) -> str:
        """'48.1 ms [41.0–52.3]', '48.1 ms [41.0–open]: 16 requests cannot bound a p99 above'."""
        if self.value is None:
            return "no figure"
        if self.value >= FAILED:
            return "beyond every target (failed requests)"
        ms = lambda v: "open" if v is None or v >= FAILED else f"{v * 1000:.1f}"  # noqa: E731
        text = f"{self.value * 1000:.1f} ms [{ms(self.low)}–{ms(self.high)}]"
        if self.high is None or self.high >= FAILED:
            text += f" ({self.n} requests cannot bound a p{self.target.percentile:g} above)"
        return text


def percentile_figure(values: Sequence[float], target: Target) -> PercentileFigure:
    """The target's percentile of `values` (numpy's linear interpolation, as records/measures.py) with its
    distribution-free interval."""
    if not values:
        return PercentileFigure(target, None, None, None, 0)
    data = np.asarray(values, dtype=float)
    value = float(np.percentile(data, target.percentile))
    if target.percentile >= 100:
        return PercentileFigure(target, value, value, value, len(data))
    ci = stats.quantile_test(data, p=target.percentile / 100).confidence_interval(CONFIDENCE)
    finite = lambda v: None if v is None or not math.isfinite(v) else float(v)  # noqa: E731
    return PercentileFigure(target, value, finite(ci.low), finite(ci.high), len(data))


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
        return all(p.within for p in self.percentiles)

    def words(self) -> str:
        missed = [p.target.words() for p in self.percentiles if not p.within]
        return "meets the SLO" if not missed else "misses " + " and ".join(missed)


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
    percentiles = []
    for t in targets:
        values = [float(row[COLUMN[t.metric]]) for row in rows if row[COLUMN[t.metric]] is not None]
        missing = sum(1 for row in rows if row[COLUMN[t.metric]] is None)
        # a failed request counts as beyond every target: it enters the percentile as FAILED seconds
        percentiles.append(percentile_figure(values + [FAILED] * missing, t))
    return StepSlo(percentiles=tuple(percentiles), good=sum(1 for row in rows if is_good(row, targets)),
                   total=len(rows),
                   goodput_rps=sum(g[0] for g in chosen) / len(chosen) if chosen else 0.0,
                   goodput_tok_s=sum(g[1] for g in chosen) / len(chosen) if chosen else 0.0,
                   repeat_goodput_tok_s=tuple(0.0 if g is None else g[1] for g in per_repeat))
