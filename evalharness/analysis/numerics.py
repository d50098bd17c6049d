"""The numerics check (issue 26): how far a cell's next-token distributions are from the reference's, per token, in
both directions, from the saved distribution files. Pure functions over records (records/measures.py `Scored`);
imports no phase, runner or render code.

The figure: for tokens x that one side (`from`) sampled at temperature 1, the mean over positions of
log p_from(x) - log p_to(x) is an unbiased estimate of the per-token KL(from || to) averaged over the contexts that
side produces (E_{x~p}[log p(x)/q(x)] = KL(p || q) at every position). It needs only each side's log-probability of
the token that is there, never a top-k list, so it cannot be hidden by top-k: two disjoint top-5 sets, or a
reference token of probability 0.8 dropping out of the cell's top-5, show at their full size. Positions are keyed
by token id (the same ids are sent to both sides), so tokens that decode alike never collide.

- forward, KL(ref || cell): the reference's own samples (its contexts), each side scoring them by echo (prefill);
- reverse, KL(cell || ref): the cell's own samples with their decode-time log-probabilities (which is where decode
  kernels, CUDA graphs, speculative decoding and the sampler act), the reference scoring them by echo. With a
  speculative cell the log-probabilities are the target model's of the tokens it accepted. Decode and prefill are two
  passes that differ a little in one engine too, so the reference's own decode-time minus prefill figure on its own
  samples (`decode_floor`, per context) is subtracted, the contexts resampled together on both sides: a cell with the
  reference's settings measures zero (an interval around it), not the engine's decode-vs-prefill gap.

The interval: a bootstrap over contexts (scipy.stats.bootstrap, BCa, paired sums and counts, the statistic the
ratio of their totals), because positions within one context are correlated and contexts are the independent unit.
It covers the mean per-token KL over contexts drawn like these prompts' continuations, at the stated level; it is
not a bound on any single position. An estimate a little below 0 (when nothing differs beyond float noise) is
reported as it is: clipping at 0 would bias it.

The coarse figures beside it (`topk_figures`): KL over the shared top-k plus a rest bucket (a lower bound, see
analysis/stats.py `topk_kl`), the share of positions with the same top token, and the share whose top-k sets are
disjoint (a position where the coarse figure is blind by construction).
"""

from __future__ import annotations

import math
import warnings
from typing import Sequence

import numpy as np
from scipy.stats import bootstrap

from evalharness.analysis.stats import topk_kl
from evalharness.matrix.base import LENGTH_SCENARIO_PREFIX
from evalharness.records.drift import DistributionDrift, KLEstimate
from evalharness.records.measures import Scored, percentiles

CONFIDENCE = 0.9  # two-sided, as every other interval of the report
RESAMPLES = 2000
# fewer contexts than this get the estimate without an interval: a bootstrap over 2-4 clusters has only a handful of
# distinct resamples, and its "90%" would say more than the data (the length buckets' few documents, issue 39)
MIN_CONTEXTS = 5


def kl_estimate(per_context: Sequence[Sequence[float]], confidence: float = CONFIDENCE,
                resamples: int = RESAMPLES, seed: int = 0,
                floor: Sequence[Sequence[float]] | None = None) -> KLEstimate:
    """The mean log-ratio over every position of every context, with a bootstrap interval over contexts. With
    `floor` (per context, aligned with `per_context`): the floor's own mean log-ratio is subtracted, the contexts
    resampled together on both sides, so the interval covers the difference."""
    pairs = [(np.asarray(r, dtype=float), np.asarray(f, dtype=float))
             for r, f in zip(per_context, floor if floor is not None else [[0.0]] * len(per_context))
             if len(r) and len(f)]
    if not pairs:
        return KLEstimate(available=False, reason="no positions could be paired", confidence=confidence)
    sums, counts = np.array([r.sum() for r, _ in pairs]), np.array([float(len(r)) for r, _ in pairs])
    floor_sums, floor_counts = np.array([f.sum() for _, f in pairs]), np.array([float(len(f)) for _, f in pairs])
    floor_mean = float(floor_sums.sum() / floor_counts.sum()) if floor is not None else 0.0
    estimate = float(sums.sum() / counts.sum()) - floor_mean
    out = KLEstimate(available=True, estimate=estimate + 0.0, confidence=confidence, positions=int(counts.sum()),
                     contexts=len(pairs), floor=floor_mean if floor is not None else None)
    if len(pairs) < MIN_CONTEXTS:
        return out  # too few contexts for an interval over them
    if np.ptp(sums / counts - (floor_sums / floor_counts if floor is not None else 0.0)) == 0:
        out.ci_low = out.ci_high = estimate  # every context the same (identical engines): no spread to resample
        return out

    def statistic(s: np.ndarray, c: np.ndarray, fs: np.ndarray, fc: np.ndarray, axis: int = -1) -> np.ndarray:
        own = s.sum(axis=axis) / c.sum(axis=axis)
        return own - fs.sum(axis=axis) / fc.sum(axis=axis) if floor is not None else own

    low = high = math.nan
    for method in ("BCa", "percentile"):  # BCa can be undefined (its jackknife degenerate): then the percentile one
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = bootstrap((sums, counts, floor_sums, floor_counts), statistic, paired=True, vectorized=True,
                            confidence_level=confidence, n_resamples=resamples, method=method,
                            rng=np.random.default_rng(seed))
        low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if math.isfinite(low) and math.isfinite(high):
            break
    out.ci_low, out.ci_high = low, high
    return out


def log_ratios(numerator: Scored, denominator: Scored) -> list[float] | str:
    """Per position, log p(x) on `numerator`'s side minus on `denominator`'s, for the same tokens by id; a reason
    (str) when the two cannot be paired."""
    if numerator.error or denominator.error:
        return numerator.error or denominator.error or ""
    if not numerator.token_ids or not denominator.token_ids:
        return "scored without token ids (a record from before issue 26)"
    if numerator.token_ids != denominator.token_ids:
        return "the two sides scored different tokens"
    pairs = list(zip(numerator.logprobs, denominator.logprobs))
    if len(pairs) != len(numerator.token_ids) or any(a is None or b is None for a, b in pairs):
        return "a side gave no log-probability for some token"
    return [float(a) - float(b) for a, b in pairs]


def _paired_rows(numerators: Sequence[Scored],
                 denominators: Sequence[Scored]) -> tuple[dict[str, list[float]], list[str]]:
    """Context id -> per-position log-ratios, for the contexts both sides scored with the same tokens; and the
    reasons of those that could not be paired."""
    by_id = {s.id: s for s in denominators}
    rows: dict[str, list[float]] = {}
    reasons: list[str] = []
    for num in numerators:
        den = by_id.get(num.id)
        if den is None:
            continue
        found = log_ratios(num, den)
        if isinstance(found, str):
            reasons.append(found)
        else:
            rows[num.id] = found
    return rows, reasons


def direction(numerators: Sequence[Scored], denominators: Sequence[Scored],
              confidence: float = CONFIDENCE, floor: dict[str, list[float]] | None = None) -> KLEstimate:
    """One direction's estimate over the contexts both sides have (paired by id); `numerators` are the sampling
    side's scores of its own samples. `floor` (context id -> log-ratios): subtracted per context, over the contexts
    it has (kl_estimate)."""
    rows, reasons = _paired_rows(numerators, denominators)
    if floor is not None:
        rows = {cid: r for cid, r in rows.items() if floor.get(cid)}
    if not rows:
        reason = reasons[0] if reasons else "no context was scored on both sides"
        return KLEstimate(available=False, reason=reason, confidence=confidence)
    return kl_estimate(list(rows.values()), confidence,
                       floor=[floor[cid] for cid in rows] if floor is not None else None)


def decode_floor(reference_samples: Sequence[Scored], reference_echo: Sequence[Scored]) -> dict[str, list[float]]:
    """The reference's own decode-time minus prefill log-probabilities of its own samples (contexts.jsonl against
    its distribution.jsonl), per context: the part of a reverse figure that two passes of one engine produce by
    themselves (measured on the real SGLang 0.5.23, float32 CPU: 7.3e-6 [5.7e-6, 8.9e-6] per token, a server
    against itself; vLLM 0.32.0: up to 1.5e-5 per token). Empty when the records have no decode-time figures."""
    rows, _ = _paired_rows(reference_samples, reference_echo)
    return rows


def topk_figures(reference: Sequence[Scored], cell: Sequence[Scored]) -> DistributionDrift:
    """The coarse top-k figures over the positions both sides scored with the same tokens (by id where the records
    have ids, else by text as before issue 26): KL over the shared top-k (a lower bound), same top token, and the
    share of positions whose top-k sets are disjoint (only where keys are ids: text keys can collide)."""
    by_id = {s.id: s for s in cell}
    errors = [s.error for s in [*reference, *cell] if s.error]
    klds: list[float] = []
    same = disjoint = 0
    keyed_by_id = True
    for ref in reference:
        other = by_id.get(ref.id)
        if ref.error or other is None or other.error:
            continue
        if (ref.token_ids or other.token_ids) and ref.token_ids != other.token_ids:
            continue
        if not ref.token_ids and ref.tokens != other.tokens:
            continue  # the same text must tokenize the same way on both sides to pair positions
        keyed_by_id &= bool(ref.token_ids)
        for p, q in zip(ref.top, other.top):
            if not p or not q:
                continue
            klds.append(topk_kl(p, q))
            same += max(p, key=p.get) == max(q, key=q.get)
            disjoint += not set(p) & set(q)
    if not klds:
        return DistributionDrift(available=False, reason=errors[0] if errors else "no positions could be paired")
    return DistributionDrift(available=True, positions=len(klds), mean_kld=sum(klds) / len(klds),
                             p99_kld=percentiles(klds).p99, max_kld=max(klds), same_top_token=same / len(klds),
                             disjoint_topk=disjoint / len(klds) if keyed_by_id else None)


def identical_samples(cell_samples: Sequence[Scored], reference_samples: Sequence[Scored]) -> int | None:
    """How many of the cell's own samples are token for token the reference's at the same context and seed (None
    when the reference's samples are not there to compare): evidence that the reverse figure is the cell's own."""
    ref = {s.id: s for s in reference_samples if not s.error and s.token_ids}
    pairs = [(s, ref[s.id]) for s in cell_samples if not s.error and s.id in ref]
    if not pairs:
        return None
    return sum(1 for s, r in pairs if s.token_ids == r.token_ids and s.prompt_ids == r.prompt_ids)


def bucket_of(context_id: str) -> int | None:
    """The length bucket a context was sampled for (`length-<B>/<document>`, runner/lengthfiles.py), else None."""
    head = context_id.split("/", 1)[0]
    if "/" not in context_id or not head.startswith(LENGTH_SCENARIO_PREFIX):
        return None
    number = head[len(LENGTH_SCENARIO_PREFIX):]
    return int(number) if number.isdigit() else None


def compare_distributions(reference_echo: Sequence[Scored], cell_echo: Sequence[Scored],
                          cell_samples: Sequence[Scored] = (), reverse_scored: Sequence[Scored] = (),
                          reference_samples: Sequence[Scored] = ()) -> DistributionDrift:
    """compare_one over the numerics check's own contexts, and again over each length bucket's documents apart
    (`by_bucket`), so that the headline figures mean what they meant before the buckets existed."""
    groups = (reference_echo, cell_echo, cell_samples, reverse_scored, reference_samples)
    buckets = sorted({b for s in reference_echo if (b := bucket_of(s.id)) is not None})
    out = compare_one(*([s for s in group if bucket_of(s.id) is None] for group in groups))
    for bucket in buckets:
        out.by_bucket[bucket] = compare_one(*([s for s in group if bucket_of(s.id) == bucket] for group in groups))
    return out


def compare_one(reference_echo: Sequence[Scored], cell_echo: Sequence[Scored],
                cell_samples: Sequence[Scored] = (), reverse_scored: Sequence[Scored] = (),
                reference_samples: Sequence[Scored] = ()) -> DistributionDrift:
    """Every figure of one cell against the reference: the coarse top-k ones and both unbiased directions.
    `reference_echo`/`cell_echo`: each side's echo of the reference's contexts (distribution.jsonl);
    `cell_samples`: the cell's own samples (own_samples.jsonl); `reverse_scored`: the reference's echo of them;
    `reference_samples`: the reference's contexts as sampled (for `own_samples_identical`)."""
    out = topk_figures(reference_echo, cell_echo)
    out.forward = direction(reference_echo, cell_echo)
    own_errors = [s.error for s in cell_samples if s.error]
    if not cell_samples:
        out.reverse = KLEstimate(available=False, reason="the cell has no own samples (a run from before issue 26)")
    elif len(own_errors) == len(cell_samples):
        out.reverse = KLEstimate(available=False, reason=own_errors[0])
    elif not reverse_scored:
        out.reverse = KLEstimate(available=False, reason="the reference has not scored this cell's own samples "
                                 "(the run's last step on this machine, which `run --resume` finishes; "
                                 "not yet on a Ray cluster)")
    else:
        # the reference's own decode-vs-prefill difference subtracted: a cell with the reference's settings then
        # measures zero, and what remains is the cell's decode path against the reference's
        floor = decode_floor(reference_samples, reference_echo) or None
        out.reverse = direction(cell_samples, reverse_scored, floor=floor)
        out.reverse.own_samples_identical = identical_samples(cell_samples, reference_samples)
    if not out.available and out.forward.available:
        out.available, out.reason = True, None
    return out
