"""The calibrated pass: a bootstrap of the t statistic under the null imposed by empirical-likelihood tilting (pure).

Owns the test behind the verdicts that ship a cell on the t path (per-document means: repeats, continuous and pooled
metrics): the gate's pass (H0 "drop >= margin") and the other side of equivalence (H0 "drop <= -margin"). The t-test
over documents is not exact there at high accuracy: most documents always right, a few carrying the variance, so
the per-document differences are skewed and the studentized mean is skewed the other way. Measured (issue 37;
benchmarks/README.md, the benchmarks' model, 20,000 runs a line, the ratio of the error to its nominal level): at
accuracy 0.95 a true drop of the margin passes 1.02-1.13x alpha at 0.05 and 1.07-1.68x at the small levels a
stopped look spends; a true gain of the margin is called "equivalent" 1.8-1.9x alpha at 0.05 and 3.5-10.7x at 0.01-
0.002. Deterministic corrections measured on the same draws do not reach alpha: Cornish-Fisher with the tilted null's
skewness (1.24-1.33x on the gain's side at 0.05), with its kurtosis as well (1.14-1.17x), Johnson's and Hall's
skew corrections with the sample's skewness (worse than t on the drop's side), empirical likelihood alone, several
effective degrees of freedom. This bootstrap is the one that does (1.02-1.08x at 0.05, 2,000 runs a line).

The test: the documents are resampled with the empirical-likelihood weights that make the mean drop equal the null
value delta (Owen 2001; the weights p_i = 1 / (n (1 + lambda x_i)) with x_i the document's estimating-equation term
w_i (d_i - delta)), the t statistic of each resample taken about delta with the package's clustered standard error,
and the observed t compared with that distribution (Monte Carlo p-value (1 + #{T* <= T}) / (B + 1)). Its bound is
the one the same resamples give: the upper end est - c se with c the resamples' critical value, so the bound is
below the margin exactly when the test rejects (the interval's ends are each calibrated at their own margin).

Deterministic: the uniforms behind the resamples are fixed by (n, B), so a verdict never changes between runs of the
report, and the benchmarks' replicas call these same functions on the same draws. B grows with the level so that at
least 20 resamples lie beyond the critical value (1,999 at alpha 0.05, at most 19,999: a level under 1 / 20,000
cannot be reached; with the default looks only a first look spends less, 0.0002, and that rarely settles anything).
Where delta lies outside the documents' differences (every document on one side of it) no weights can impose it:
the t-test decides (`None` here).

A decision alone (a look's "equivalent yet?") need not sort every resample: `rejects` counts the resamples as
extreme as the statistic a chunk at a time and stops once too many are, the same answer as the whole distribution's
p-value (each resample's statistic does not depend on which others are computed with it; unit-tested). On a look's
usual "not yet" it reads a few hundred resamples instead of thousands: measured on 1,200 TOST decisions (true drops
-0.02 to 0.02, 4-15 cell repeats, levels 0.05 to 0.00022, n = 200), 8.5-9.3 s against 33.7-37.6 s for the bounds
of the whole distributions, 3.6-4.4x, the same decisions (two runs, not side by side on a quiet machine).

Must not import anything outside analysis/stats' dependencies (numpy).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Literal, Sequence

import numpy as np

Side = Literal["below", "above"]  # below: H0 "drop >= delta" (small p: credibly below); above: H0 "drop <= delta"
MIN_RESAMPLES, MAX_RESAMPLES, BEYOND = 1999, 19999, 20


def resamples_for(level: float) -> int:
    """B for a one-sided test at `level`: at least BEYOND resamples beyond the critical value, B + 1 a round
    number so that level (B + 1) is whole at the usual levels."""
    wanted = math.ceil(BEYOND / max(level, 1e-12) / 1000) * 1000 - 1
    return int(min(MAX_RESAMPLES, max(MIN_RESAMPLES, wanted)))


@lru_cache(maxsize=16)  # a benchmark's tasks x levels: 16 bytes x n x B each
def _resample_plan(n: int, resamples: int) -> tuple[np.ndarray, np.ndarray]:
    """The fixed uniforms of (n, B), sorted, and where each resample's draws sit among them (B, n): a row's
    resamples are then its probabilities' cumulative sums cut into the sorted uniforms (inverse-cdf sampling in one
    pass) and read back per resample."""
    rng = np.random.default_rng([n, resamples, 37])
    flat = rng.random(n * resamples)
    order = np.argsort(flat, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return flat[order], rank.reshape(resamples, n)


def tilt(x: np.ndarray) -> np.ndarray | None:
    """Empirical-likelihood weights p_i (summing to 1) with sum p_i x_i = 0; None when 0 is outside the x's hull."""
    n = len(x)
    high, low = float(np.max(x)), float(np.min(x))
    if not (high > 0 > low):
        return None
    # lambda keeps every 1 + lambda x_i >= 1 / n (the weights at most 1); g(lambda) = sum x / (1 + lambda x) falls
    lo, hi = (1 / n - 1) / high, (1 / n - 1) / low
    for _ in range(100):
        mid = (lo + hi) / 2
        if np.sum(x / (1 + mid * x)) > 0:
            lo = mid
        else:
            hi = mid
    weights = 1 / (1 + (lo + hi) / 2 * x)
    return weights / weights.sum()


def _laid_out(d: np.ndarray, w: np.ndarray, weighted: bool, probabilities: np.ndarray,
              resamples: int) -> tuple[np.ndarray, ...]:
    """The terms each resample sums (w d, w, (w d)^2, w^2 d, w^2; unweighted: w d and its square), each laid out
    along the plan's sorted uniforms: position j holds the term of the document that uniform draws under
    `probabilities` (inverse cdf, one pass), so a resample's sum is one gather of its positions, and the
    resamples can be summed a chunk at a time from one layout."""
    uniforms, _ = _resample_plan(len(d), resamples)
    cum = np.cumsum(probabilities)
    cum[-1] = 1.0
    draws = np.diff(np.concatenate(([0], np.searchsorted(uniforms, cum, side="right"))))
    a = w * d
    terms = (a, w, a * a, a * w, w * w) if weighted else (a, a * a)
    return tuple(np.repeat(term, draws) for term in terms)


def _resampled_t(laid_out: tuple[np.ndarray, ...], n: int, delta: float, resamples: int, rows: slice) -> np.ndarray:
    """The t statistics about delta of the plan's resamples `rows` (unsorted): each row's value is the same whatever
    rows are computed with it, so a count over chunks equals the count over all of them."""
    positions = _resample_plan(n, resamples)[1][rows]  # (rows, n): where each resample's draws sit
    sums = [term[positions].sum(axis=1) for term in laid_out]
    if len(sums) == 2:  # unweighted, w = 1: the sums of w and w^2 are n, of w^2 d the first (two gathers, not five)
        count = positions.shape[0]
        sums = [sums[0], np.full(count, float(n)), sums[1], sums[0], np.full(count, float(n))]
    ratio = sums[0] / sums[1]
    spread = np.maximum(0.0, sums[2] - 2 * ratio * sums[3] + ratio ** 2 * sums[4])
    se = np.sqrt(n / (n - 1) * spread) / sums[1]
    excess = ratio - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(se > 1e-15, excess / np.where(se > 1e-15, se, 1.0),
                        np.where(np.abs(excess) < 1e-15, 0.0, np.sign(excess) * np.inf))


def _tilted(drops: Sequence[float], weights: Sequence[float] | None,
            delta: float) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    d = np.asarray(drops, dtype=float)
    w = np.ones_like(d) if weights is None else np.asarray(weights, dtype=float)
    probabilities = tilt(w * (d - delta))
    return None if probabilities is None or len(d) < 2 else (d, w, probabilities)


def null_t(drops: Sequence[float], weights: Sequence[float] | None, delta: float,
           resamples: int) -> np.ndarray | None:
    """The sorted t statistics about delta of `resamples` resamples drawn under the tilted null; None where no
    weights impose delta. The statistic is the package's: the ratio estimator sum w d / sum w, its standard error
    clustered by document (analysis/stats.py paired_evidence)."""
    tilted = _tilted(drops, weights, delta)
    if tilted is None:
        return None
    d, w, probabilities = tilted
    laid_out = _laid_out(d, w, weights is not None, probabilities, resamples)
    return np.sort(_resampled_t(laid_out, len(d), delta, resamples, slice(None)))


def rejects(drops: Sequence[float], weights: Sequence[float] | None, delta: float, statistic: float, side: Side,
            level: float) -> bool | None:
    """Whether the test at `level` rejects (the p-value of `statistic` against null_t's resamples below `level`),
    counting the resamples as extreme chunk by chunk and stopping as soon as too many are: the same resamples and
    decision as `p_value(statistic, null_t(...), side) < level`, at a fraction of the cost where the test cannot
    reject (a look's "not yet"). None where no weights impose delta."""
    tilted = _tilted(drops, weights, delta)
    if tilted is None:
        return None
    d, w, probabilities = tilted
    resamples = resamples_for(level)
    allowed = _most_beyond(level, resamples)
    if allowed < 0:
        return False
    laid_out = _laid_out(d, w, weights is not None, probabilities, resamples)
    seen, start, chunk = 0, 0, 250
    while start < resamples:
        stats = _resampled_t(laid_out, len(d), delta, resamples, slice(start, start + chunk))
        seen += int(np.sum(stats <= statistic) if side == "below" else np.sum(stats >= statistic))
        if seen > allowed:
            return False
        start, chunk = start + chunk, chunk * 2
    return True


def _most_beyond(level: float, resamples: int) -> int:
    """The most resamples as extreme as the statistic that still reject at `level`: (1 + count) / (B + 1) < level."""
    return math.ceil(level * (resamples + 1) - 1e-9) - 2


def p_value(statistic: float, distribution: np.ndarray, side: Side) -> float:
    """Monte Carlo p-value of the observed t against the null's resamples: (1 + #{T* as or more extreme}) / (B + 1)."""
    count = int(np.searchsorted(distribution, statistic, side="right")) if side == "below" else \
        int(len(distribution) - np.searchsorted(distribution, statistic, side="left"))
    return (1 + count) / (len(distribution) + 1)


def critical(distribution: np.ndarray, level: float, side: Side) -> float:
    """The t value the observed statistic must pass (below it for "below", above it for "above") for the p-value
    to be under `level`; +-inf where no statistic can (level under 1 / (B + 1))."""
    beyond = _most_beyond(level, len(distribution))
    if beyond < 0:
        return -math.inf if side == "below" else math.inf
    return float(distribution[beyond] if side == "below" else distribution[len(distribution) - 1 - beyond])

