"""Output length as a check (issue 60, 3): a cell that stops early looks faster. MLPerf's compliance tests hold a
submission's mean output length within ±10% of the reference's (TEST06, TEST09) so that truncation cannot inflate
throughput; here every cell's output tokens per answer are held against the reference's, per quality task and per
throughput scenario, and a cell outside the tolerance is named beside its speed-up (render/verdict.py).

Per quality task the answers are paired by document (each document's mean `completion_tokens` over its repeats,
analysis/secondary.py `per_document`, read by the drift with the secondary figures: DOCUMENT_FIELDS) and the ratio of
the means, cell over reference, gets a two-sided (1 - 2 alpha) interval: the ratio estimator's delta-method standard
error, clustered by document (the residuals c_i - R r_i), on the log scale (log R +- t se / R, Student's t on n - 1
degrees of freedom; a scratch comparison on the benchmark's draws: at a true 0.9 the log scale called `shorter` 7.3 /
9.7 / 7.3 / 5.3% where the plain delta interval did 7.7 / 11.7 / 8.5 / 5.3%, and a bootstrap-t 6.8 / 8.8 / 6.5 / 6.3%,
for no gain worth its resamples).
The outcome: `shorter` / `longer` when the interval lies wholly below / above [1 - tolerance, 1 + tolerance] (each
side a one-sided test at alpha), `within` when it lies inside (TOST), else `undecided`. A greedy engine answering a
document the same length every time gives a point. benchmarks/output_length.py measures the errors at the demo's and
sm120's sizes: a cell truly as long is named at most 1.6% of the time; at a true 0.9 `shorter` is said 5-10% (the
more, the fewer and more skewed the documents); `within` is not a guarantee against a cell that cuts only its
longest answers (at a true 0.9 so made, 10-30%), so the report never says it as one.

Per throughput scenario whose requests ask for a fixed `output_len` (ignore_eos, the default; the reference
returned it) the check is a point: the mean tokens per completed request as the client counted them, against the
reference's in the same scenario. A scenario of natural lengths is not checked (its lengths vary by chance).

Pure; reads records (the samples files through analysis/secondary.py) only.
"""

from __future__ import annotations

import math
from scipy import stats

from evalharness.analysis.secondary import FIELDS
from evalharness.records.drift import OutputLength
from evalharness.records.measures import ScenarioResult

TOLERANCE = 0.10  # within ±10% of the reference's mean output length (MLPerf TEST06 / TEST09)
FIXED_SHARE = 0.99  # the reference's requests returned what they asked: a fixed-length (ignore_eos) scenario
DOCUMENT_FIELDS = (*FIELDS, "completion_tokens")  # what the drift reads per document once for both checks
MIN_DOCUMENTS = 2


def _outcome(low: float, high: float, tolerance: float) -> str:
    if high < 1 - tolerance:
        return "shorter"
    if low > 1 + tolerance:
        return "longer"
    if low > 1 - tolerance and high < 1 + tolerance:
        return "within"
    return "undecided"


def length_ratio(task: str, reference: dict[str, float], cell: dict[str, float], tolerance: float = TOLERANCE,
                 alpha: float = 0.05) -> OutputLength | None:
    """The paired check of one task: document -> mean output tokens on each side (None: fewer than two documents
    in common, or a reference that wrote nothing)."""
    docs = [d for d in reference if d in cell]
    n = len(docs)
    if n < MIN_DOCUMENTS:
        return None
    r = [reference[d] for d in docs]
    c = [cell[d] for d in docs]
    mean_r, mean_c = sum(r) / n, sum(c) / n
    if mean_r <= 0:
        return None
    ratio = mean_c / mean_r
    spread = sum((ci - ratio * ri) ** 2 for ci, ri in zip(c, r))
    se = math.sqrt(spread / (n * (n - 1))) / mean_r
    if ratio <= 0:
        low = high = 0.0
    else:  # on the log scale: a ratio's interval is skewed (delta method for log R: se / R)
        half = float(stats.t.ppf(1 - alpha, n - 1)) * se / ratio
        low, high = ratio * math.exp(-half), ratio * math.exp(half)
    return OutputLength(task=task, documents=n, reference=mean_r, cell=mean_c, ratio=ratio, low=low, high=high,
                        confidence=1 - 2 * alpha, tolerance=tolerance, outcome=_outcome(low, high, tolerance))


def tokens_per_request(scenario: ScenarioResult) -> tuple[float, int] | None:
    """(mean output tokens per completed request, requests) over every repeat: each request's own count where the
    repeats recorded them (the scenario's `output_tokens` sums only the repeats the speed rule kept, its `completed`
    counts all: their quotient is no request's length), else the scenario's totals (a run before per-request
    figures). None where nothing completed."""
    counts = [float(r[3]) for f in scenario.repeat_figures for r in f.per_request
              if len(r) > 3 and r[0] is not None and r[3] is not None]
    if counts:
        return sum(counts) / len(counts), len(counts)
    if scenario.completed and not scenario.repeat_figures:
        return scenario.output_tokens / scenario.completed, scenario.completed
    return None


def scenario_lengths(reference: list[ScenarioResult], cell: list[ScenarioResult],
                     tolerance: float = TOLERANCE) -> list[OutputLength]:
    """Each fixed-length scenario both sides measured: mean tokens per completed request, a point comparison. Only
    where the reference returned what its requests asked (`output_len`, ignore_eos): there every request of an
    engine that honours the request returns exactly that, so any shortfall is the cell's; a scenario of natural
    lengths (ignore_eos false) varies by chance, and a point would say more than it tests, so it is left out."""
    theirs = {s.name: s for s in reference}
    out = []
    for mine in cell:
        ref = theirs.get(mine.name)
        ref_tokens, cell_tokens = (tokens_per_request(ref) if ref is not None else None), tokens_per_request(mine)
        if ref_tokens is None or cell_tokens is None or ref_tokens[0] < FIXED_SHARE * ref.output_len:
            continue
        ratio = cell_tokens[0] / ref_tokens[0]
        outcome = "shorter" if ratio < 1 - tolerance else "longer" if ratio > 1 + tolerance else "within"
        out.append(OutputLength(task=f"throughput:{mine.name}", documents=cell_tokens[1], reference=ref_tokens[0],
                                cell=cell_tokens[0], ratio=ratio, tolerance=tolerance, outcome=outcome))
    return out


def tolerance_of(gate: dict | None) -> float:
    value = (gate or {}).get("length_tolerance")
    return float(value) if value is not None else TOLERANCE
