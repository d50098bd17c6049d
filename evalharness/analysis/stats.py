"""Statistics for drift between two paired sets of samples, and for throughput ratios. Pure functions, tested on hand
cases and by simulation (tests/unit/analysis/test_equivalence.py, benchmarks/gate_false_alarms.py).

- `PairedEvidence`: the paired difference of one task between a reference and a cell, as a *drop* (reference minus
  cell in the metric's better direction), with the test it comes from, one-sided p-values against any margin and
  the intervals that invert that same test, so an interval and a p-value can never disagree:
  - single 0/1 samples (or repeats that agree within every document, as greedy decoding does): Tango's asymptotic
    score test for a difference of paired proportions, with a continuity correction so that it reaches the exact
    McNemar test's conclusions at small counts (4 right->wrong, 0 wrong->right of 60: p 0.13 against exact 0.125);
    its interval is never zero-width (no flips in 200 documents: +-0.022 at 90%). Hand-written: statsmodels 0.15 has
    paired intervals only for the risk ratio (`_confint_riskratio_paired_nam`, private) and none for a difference,
    scipy none; about 30 lines on scipy's root finder;
  - per-document means (repeats, continuous metrics, instruction-level metrics pooled as lm-eval pools them): a
    t-test over documents of the per-document differences, weighted by each document's instruction count where the
    metric is pooled, its variance the ratio estimator's clustered by document (documents are the independent unit,
    repeats and instructions within them are not);
- exact McNemar p-value (scipy), shown beside the flips;
- `log_ratio_interval`: a t interval of the log throughput ratio from independent repeats of each side (statsmodels'
  Welch comparison on the logs), which keeps its coverage at 3 against 3 where a percentile bootstrap gave about 80%;
  the speed rule (analysis/speed.py) decides on it;
- Holm and Benjamini-Hochberg adjustments, in numpy: statsmodels' `multipletests` gives the same values but calls
  `gc.collect()` on every call, 58 ms a call in the harness's process (measured 2026-12-01, 96 p-values), half of a
  24-cell gate's time and minutes in the benchmark's simulations; tests/unit/analysis/test_equivalence.py checks the
  two agree;
- KL divergence between two top-k next-token distributions, over the shared top-k plus one "rest" bucket.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal, Sequence

import numpy as np
from scipy.optimize import brentq
from scipy.stats import binomtest, norm, t as student_t

from evalharness.analysis import nullboot

Method = Literal["score", "t"]


def mcnemar_exact(right_to_wrong: int, wrong_to_right: int) -> float:
    """Two-sided exact McNemar p-value: under no change, each discordant pair goes either way with probability 1/2."""
    n = right_to_wrong + wrong_to_right
    if n == 0:
        return 1.0
    return float(binomtest(right_to_wrong, n, 0.5).pvalue)


def tango_z(lost, gained, n: int, delta: float):
    """Tango's score statistic (1998) for H0: drop = delta, continuity-corrected; the drop is (lost - gained) / n with
    `lost` right->wrong and `gained` wrong->right pairs. Positive when the observed drop is above delta. The variance
    uses the restricted maximum-likelihood share of wrong->right pairs under H0 (a root of 2n x^2 + W x - gained
    delta (1 - delta) = 0, W = -lost - gained + (2n - lost + gained) delta). Takes numbers or numpy arrays alike (the
    benchmarks decide thousands of simulated runs with it)."""
    lost, gained = np.asarray(lost, dtype=float), np.asarray(gained, dtype=float)
    excess = lost - gained - n * delta
    corrected = np.sign(excess) * np.maximum(0.0, np.abs(excess) - 1.0)
    w = -lost - gained + (2 * n - lost + gained) * delta
    x = (np.sqrt(np.maximum(0.0, w * w + 8 * n * gained * delta * (1 - delta))) - w) / (4 * n)
    variance = n * (2 * x + delta * (1 - delta))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(variance > 0, corrected / np.sqrt(np.where(variance > 0, variance, 1.0)),
                     np.sign(corrected) * np.inf)
    return np.where(corrected == 0.0, 0.0, z)


@dataclass(frozen=True)
class PairedEvidence:
    """The paired drop of one task (reference minus cell, in the metric's better direction: positive is worse) and
    the test it rests on. `statistic(delta)` is the test of H0: drop = delta, positive when the data say more."""

    method: Method
    n: int  # documents
    estimate: float  # the observed drop
    lost: int = 0  # score method: right->wrong and wrong->right documents
    gained: int = 0
    se: float = 0.0  # t method: the drop's standard error over documents, and its degrees of freedom
    df: int = 0
    # t method: the per-document drops and weights the calibrated pass resamples (analysis/nullboot.py); empty: the
    # t-test alone (evidence built from summaries, or `paired_evidence(..., calibrate=False)`)
    drops: tuple[float, ...] = field(default=(), repr=False, compare=False)
    weights: tuple[float, ...] | None = field(default=None, repr=False, compare=False)

    def statistic(self, delta: float) -> float:
        if self.method == "score":
            return float(tango_z(self.lost, self.gained, self.n, delta))
        return (self.estimate - delta) / self.se if self.se > 0 else math.copysign(math.inf, self.estimate - delta)

    def _cdf(self, z: float) -> float:
        return float(norm.cdf(z) if self.method == "score" else student_t.cdf(z, self.df))

    def _quantile(self, q: float) -> float:
        return float(norm.ppf(q) if self.method == "score" else student_t.ppf(q, self.df))

    def p_above(self, delta: float) -> float:
        """One-sided p-value of H0: drop <= delta (small: the drop is credibly above delta)."""
        return 1.0 - self._cdf(self.statistic(delta))

    def p_below(self, delta: float) -> float:
        """One-sided p-value of H0: drop >= delta (small: the drop is credibly below delta)."""
        return self._cdf(self.statistic(delta))

    def p_no_difference(self) -> float:
        """Two-sided p-value of H0: drop = 0, from the same test as the intervals."""
        return min(1.0, 2 * min(self.p_above(0.0), self.p_below(0.0)))

    def bound(self, level: float, side: Literal["lower", "upper"]) -> float:
        """The one-sided `level` confidence bound of the drop, inverting the same test (never zero-width: the
        continuity-corrected score statistic needs more than one document's flip to move)."""
        z = self._quantile(level)
        if self.method == "t":
            return self.estimate - z * self.se if side == "lower" else self.estimate + z * self.se
        target = z if side == "lower" else -z
        f = lambda d: self.statistic(d) - target  # noqa: E731  (decreasing in d)
        lo, hi = -1 + 1e-12, 1 - 1e-12
        if f(lo) <= 0:
            return -1.0
        if f(hi) >= 0:
            return 1.0
        return float(brentq(f, lo, hi, xtol=1e-10))

    def interval(self, confidence: float) -> tuple[float, float]:
        """Two-sided `confidence` interval of the drop: the one-sided bounds at (1 + confidence) / 2."""
        level = (1 + confidence) / 2
        return self.bound(level, "lower"), self.bound(level, "upper")

    def _null(self, delta: float, level: float, rejecting_side: bool) -> np.ndarray | None:
        # only where the estimate lies on the side of delta that can reject: beyond it the t's p-value is above one
        # half and its bound beyond delta, as the resamples' would be, and no level decides otherwise (2 ms saved)
        if self.method != "t" or not self.drops or self.se <= 0 or not rejecting_side:
            return None
        return _null_t(self.drops, self.weights, float(delta), nullboot.resamples_for(level))

    def calibrated_p(self, delta: float, side: nullboot.Side, level: float) -> float:
        """The pass side's one-sided p-value (side "below": H0 "drop >= delta"; "above": H0 "drop <= delta") by the
        calibrated test (analysis/nullboot.py) where the t path has its documents, else `p_below` / `p_above`.
        `level`: the level it will be compared with (it sets the resamples)."""
        null = self._null(delta, level, self.estimate < delta if side == "below" else self.estimate > delta)
        if null is None:
            return self._plain_p(delta, side)
        return nullboot.p_value(self.statistic(delta), null, side)

    def _plain_p(self, delta: float, side: nullboot.Side) -> float:
        return self.p_below(delta) if side == "below" else self.p_above(delta)

    def calibrated_bound(self, level: float, side: Literal["lower", "upper"], delta: float) -> float:
        """The one-sided `level` bound that agrees with `calibrated_p` at delta: the upper bound is below delta
        exactly when "drop >= delta" is rejected at 1 - level (side "lower": above delta exactly when "drop <=
        delta" is). Clipped to [-1, 1] like the score test's."""
        null = self._null(delta, 1 - level, self.estimate < delta if side == "upper" else self.estimate > delta)
        if null is None:
            return self.bound(level, side)
        c = nullboot.critical(null, 1 - level, "below" if side == "upper" else "above")
        return float(min(1.0, max(-1.0, self.estimate - c * self.se)))

    def equivalence_bounds(self, margin: float, level: float) -> tuple[float, float]:
        """The drop's (1 - 2 level) interval the verdicts read: each end the one-sided bound of the calibrated test
        at its own margin (the upper end's null at +margin, the lower end's at -margin), so the upper end is below
        the margin exactly when the gate's pass test rejects and the interval lies inside +-margin exactly when
        TOST does. On the score path (and where nothing is resampled) the score test's or the t's own interval."""
        return (self.calibrated_bound(1 - level, "lower", -margin), self.calibrated_bound(1 - level, "upper", margin))

    def equivalent(self, margin: float, level: float) -> bool:
        """TOST at `level`: whether `equivalence_bounds(margin, level)` lie inside +-margin, decided by counting each
        side's resamples (nullboot.rejects) and stopping at the first side that cannot reject: the same decision at
        a fraction of the cost where the answer is "not yet" (a look's usual answer)."""
        if not (self.method == "t" and self.drops and self.se > 0):
            low, high = self.equivalence_bounds(margin, level)
            return -margin < low and high < margin
        if not -margin < self.estimate < margin:
            return False  # one side's p-value is above one half: nothing at a level below it rejects
        level = 1 - (1 - level)  # as equivalence_bounds' ends test it (not always `level` in floats): the same B
        sides = [(margin, "below"), (-margin, "above")]
        sides.sort(key=lambda s: -self._plain_p(*s))  # the side likelier to say "no" first
        for delta, side in sides:
            rejected = nullboot.rejects(self.drops, self.weights, delta, self.statistic(delta), side, level)
            if rejected is None:  # no weights impose delta: the t decides that side
                rejected = self._plain_p(delta, side) < level
            if not rejected:
                return False
        return True

    def standard_error(self) -> float:
        """The drop's standard error (for the score method, the 95% interval's half-width over 1.96), for pooling
        tasks and for sizing: how much the interval must shrink."""
        if self.method == "t":
            return self.se
        low, high = self.interval(0.95)
        return (high - low) / (2 * 1.959964)


@lru_cache(maxsize=512)
def _null_t(drops: tuple[float, ...], weights: tuple[float, ...] | None, delta: float,
            resamples: int) -> np.ndarray | None:
    """nullboot.null_t, kept per evidence and null: a decision asks for the p-value and the bound at the same null,
    and a report refresh decides every task again."""
    return nullboot.null_t(drops, weights, delta, resamples)


def paired_evidence(reference: Sequence[float], cell: Sequence[float], *, weights: Sequence[float] | None = None,
                    higher_is_better: bool = True, calibrate: bool = True) -> PairedEvidence:
    """The paired drop between two sides' per-document scores (each a mean over that side's repeats; `weights`: a
    pooled metric's instructions per document, the same on both sides). Both sides all 0/1 and unweighted: the score
    test on the flips; otherwise the t-test over documents. A t-test whose differences do not vary at all (every
    document moved alike, usually by nothing) falls back to the score test of no flips: no spread is not certainty."""
    if len(reference) != len(cell) or len(reference) == 0:
        raise ValueError("paired_evidence needs two non-empty sequences of the same length")
    ref = np.asarray(reference, dtype=float)
    now = np.asarray(cell, dtype=float)
    drops = ref - now if higher_is_better else now - ref
    n = len(drops)
    binary = weights is None and bool(np.all((ref == 0) | (ref == 1)) and np.all((now == 0) | (now == 1)))
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    estimate = float(np.sum(w * drops) / np.sum(w))
    if binary:
        lost, gained = int(np.sum(drops == 1)), int(np.sum(drops == -1))
        return PairedEvidence(method="score", n=n, estimate=estimate, lost=lost, gained=gained)
    if n < 2:
        return PairedEvidence(method="score", n=n, estimate=estimate)
    # the ratio estimator's variance, clustered by document: sum of w_i (d_i - D) over (sum w)^2, scaled n / (n - 1)
    residual = w * (drops - estimate)
    se = float(math.sqrt(n / (n - 1) * np.sum(residual ** 2)) / np.sum(w))
    if se < 1e-12:
        return PairedEvidence(method="score", n=n, estimate=0.0) if abs(estimate) < 1e-12 else \
            PairedEvidence(method="t", n=n, estimate=estimate, se=1.0 / n, df=n - 1)
    kept = {"drops": tuple(drops.tolist()), "weights": None if weights is None else tuple(w.tolist())} \
        if calibrate else {}
    return PairedEvidence(method="t", n=n, estimate=estimate, se=se, df=n - 1, **kept)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values (family-wise error at alpha when each is compared with alpha): the i-th smallest times
    (m - i), made non-decreasing, capped at 1."""
    p = np.asarray(p_values, dtype=float)
    if p.size == 0:
        return []
    order = np.argsort(p)
    stepped = np.minimum(1.0, np.maximum.accumulate(p[order] * (p.size - np.arange(p.size))))
    out = np.empty_like(p)
    out[order] = stepped
    return out.tolist()


def benjamini_hochberg(p_values: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg-adjusted p-values (false discovery rate at alpha when each is compared with alpha): the
    i-th smallest times m / i, made non-decreasing from the largest down, capped at 1."""
    p = np.asarray(p_values, dtype=float)
    if p.size == 0:
        return []
    order = np.argsort(p)
    scaled = p[order] * p.size / np.arange(1, p.size + 1)
    stepped = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    out = np.empty_like(p)
    out[order] = stepped
    return out.tolist()


def confidence_text(confidence: float) -> str:
    """91.1%, 99.97%: enough digits that a level near 100% does not print as 100%."""
    for digits in range(1, 6):
        text = f"{100 * confidence:.{digits}f}"
        if float(text) < 100 or confidence >= 1:
            return text.rstrip("0").rstrip(".") + "%"
    return f"{100 * confidence:.5f}%"


def log_ratio_interval(before: Sequence[float], after: Sequence[float], *, confidence: float = 0.95,
                       usevar: Literal["unequal", "pooled"] = "unequal") -> tuple[float, float, float] | None:
    """(ratio, low, high) of after over before from independent repeats (repeat i of one run has nothing to do with
    repeat i of the other): the ratio of geometric means and a t interval on the difference of mean logs, Welch's
    where both sides repeat; where only one does, its spread stands for both sides' (the unrepeated figure is a draw
    with the same noise: ignoring it covered 84% of a nominal 95% at 3 against 1). None when neither side repeats or
    a value is not positive."""
    before, after = [float(v) for v in before], [float(v) for v in after]
    if not before or not after or min(before + after) <= 0 or (len(before) < 2 and len(after) < 2):
        return None
    from statsmodels.stats.weightstats import CompareMeans, DescrStatsW

    log_b, log_a = np.log(before), np.log(after)
    diff = float(log_a.mean() - log_b.mean())
    alpha = 1 - confidence
    if len(before) >= 2 and len(after) >= 2:
        if np.ptp(log_b) == 0 and np.ptp(log_a) == 0:
            return math.exp(diff), math.exp(diff), math.exp(diff)
        low, high = CompareMeans(DescrStatsW(log_a), DescrStatsW(log_b)).tconfint_diff(alpha=alpha, usevar=usevar)
    else:  # one side ran once: the repeating side's spread stands for both sides' (a pooled t's assumption)
        spread = log_a if len(after) >= 2 else log_b
        if np.ptp(spread) == 0:
            return math.exp(diff), math.exp(diff), math.exp(diff)
        se = float(np.std(spread, ddof=1)) * math.sqrt(1 / len(before) + 1 / len(after))
        half = float(student_t.ppf(1 - alpha / 2, len(spread) - 1)) * se
        low, high = diff - half, diff + half
    return math.exp(diff), math.exp(float(low)), math.exp(float(high))


def topk_kl(reference: dict[str, float], cell: dict[str, float]) -> float:
    """KL(reference || cell) between two next-token distributions known only by their top-k log-probabilities.

    The approximation: the tokens in both top-k lists keep their probabilities; everything else on each side is one
    'rest' bucket holding that side's remaining mass (floored at 1e-6). Tokens in only one top-k list therefore count
    in the rest bucket on both sides. It is a lower bound on the full KL divergence: merging tokens into one bucket is
    a coarse-graining of both distributions, and by the data-processing inequality (the log-sum inequality, bucket by
    bucket) KL can only fall under it. It is exact when both top-k lists hold nearly all the mass, and it grows with
    the disagreement that matters: where the top tokens go. (The 1e-6 floor, for a side whose top-k sum to about 1,
    is the one place it can exceed the true value, by a negligible amount.)
    """
    # sorted, and exactly rounded sums: a set of strings iterates in an order that changes with each process's hash
    # seed, and a plain float sum in another order differs in its last bits (a resumed run re-deciding its drift
    # must give the same figures to the bit)
    shared = sorted(set(reference) & set(cell))
    p = {t: math.exp(reference[t]) for t in shared}
    q = {t: math.exp(cell[t]) for t in shared}
    p_rest = max(1e-6, 1.0 - math.fsum(p.values()))
    q_rest = max(1e-6, 1.0 - math.fsum(q.values()))
    total = math.fsum(pt * math.log(pt / max(q[t], 1e-12)) for t, pt in p.items() if pt > 0)
    return max(0.0, total + p_rest * math.log(p_rest / q_rest))


