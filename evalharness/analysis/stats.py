"""Statistics for drift between two paired sets of samples. Pure functions, tested on hand cases.

- exact McNemar test (two-sided binomial on the discordant pairs) for per-sample correctness, by scipy;
- paired bootstrap confidence interval of a difference of means (resampling documents, keeping pairs together);
- KL divergence between two top-k next-token distributions, over the shared top-k plus one "rest" bucket.
"""

from __future__ import annotations

import math
import random
from typing import Sequence


def mcnemar_exact(right_to_wrong: int, wrong_to_right: int) -> float:
    """Two-sided exact McNemar p-value: under no change, each discordant pair goes either way with probability 1/2."""
    n = right_to_wrong + wrong_to_right
    if n == 0:
        return 1.0
    # imported here: scipy.stats costs about a second to import, paid only when there are flips to test
    from scipy.stats import binomtest

    return float(binomtest(right_to_wrong, n, 0.5).pvalue)


def paired_bootstrap(reference: Sequence[float], cell: Sequence[float], *, resamples: int = 2000, seed: int = 0,
                     confidence: float = 0.95) -> tuple[float, float, float]:
    """(cell mean - reference mean, low, high): a percentile interval from resampling the paired documents."""
    if len(reference) != len(cell) or not reference:
        raise ValueError("paired_bootstrap needs two non-empty sequences of the same length")
    n = len(reference)
    diffs = [c - r for r, c in zip(reference, cell)]
    observed = sum(diffs) / n
    rng = random.Random(seed)
    means = sorted(sum(diffs[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    alpha = (1 - confidence) / 2
    low = means[max(0, int(math.floor(alpha * resamples)))]
    high = means[min(resamples - 1, int(math.ceil((1 - alpha) * resamples)) - 1)]
    return observed, low, high


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
    shared = set(reference) & set(cell)
    p = {t: math.exp(reference[t]) for t in shared}
    q = {t: math.exp(cell[t]) for t in shared}
    p_rest = max(1e-6, 1.0 - sum(p.values()))
    q_rest = max(1e-6, 1.0 - sum(q.values()))
    total = sum(pt * math.log(pt / max(q[t], 1e-12)) for t, pt in p.items() if pt > 0)
    return max(0.0, total + p_rest * math.log(p_rest / q_rest))


def ratio_interval(before: Sequence[float], after: Sequence[float], *, resamples: int = 2000, seed: int = 0,
                   confidence: float = 0.95) -> tuple[float, float, float]:
    """(mean(after) / mean(before), low, high) from independent repeats of each side (not paired: repeat i of one run
    has nothing to do with repeat i of the other), a percentile interval from resampling each side's repeats."""
    if not before or not after or sum(before) <= 0:
        raise ValueError("ratio_interval needs repeats on both sides and a positive mean before")
    rng = random.Random(seed)
    observed = (sum(after) / len(after)) / (sum(before) / len(before))
    ratios = []
    for _ in range(resamples):
        b = sum(before[rng.randrange(len(before))] for _ in before) / len(before)
        a = sum(after[rng.randrange(len(after))] for _ in after) / len(after)
        ratios.append(a / b if b > 0 else math.inf)
    ratios.sort()
    alpha = (1 - confidence) / 2
    low = ratios[max(0, int(math.floor(alpha * resamples)))]
    high = ratios[min(resamples - 1, int(math.ceil((1 - alpha) * resamples)) - 1)]
    return observed, low, high


def slower_p_value(run: Sequence[float], baseline: Sequence[float]) -> float:
    """One-sided p-value that the run's throughput is lower than the baseline's, from repeated measurements: Welch's
    t-test when both sides have two or more, a one-sample t-test against the single figure when only one side does.
    Needs at least two values on one side. Spreads of zero: 0.0 when the run is lower, else 1.0."""
    from scipy.stats import ttest_1samp, ttest_ind

    run, baseline = list(run), list(baseline)
    if len(run) < 2 and len(baseline) < 2:
        raise ValueError("slower_p_value needs at least two repeats on one side")
    lower = sum(run) / len(run) < sum(baseline) / len(baseline)
    spread = (len(run) > 1 and max(run) > min(run)) or (len(baseline) > 1 and max(baseline) > min(baseline))
    if not spread:
        return 0.0 if lower else 1.0
    if len(run) >= 2 and len(baseline) >= 2:
        p = ttest_ind(run, baseline, equal_var=False, alternative="less").pvalue
    elif len(run) >= 2:
        p = ttest_1samp(run, baseline[0], alternative="less").pvalue
    else:
        p = ttest_1samp(baseline, run[0], alternative="greater").pvalue
    return float(p) if p == p else (0.0 if lower else 1.0)  # nan: one side without spread
