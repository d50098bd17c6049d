"""A cell's drift from the run's reference cell, and the reference's own noise floor, as saved in results.json
(computed by analysis/drift.py)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, model_validator


class TaskDrift(BaseModel):
    task: str
    metric: str | None = None  # the reference's headline 'metric,filter' the records were paired on
    comparable: bool = True
    reason: str | None = None
    paired: int = 0  # documents paired
    subtasks_paired: dict[str, int] = {}  # a group's paired records per subtask
    repeats: tuple[int, int] = (1, 1)  # (reference, cell): samples per document each side's means are over
    higher_is_better: bool = True
    pooled_instructions: bool = False  # an instruction-level metric, pooled over instructions as lm-eval does
    reference: float | None = None
    cell: float | None = None
    delta: float | None = None  # cell - reference in the metric's better direction (negative: the cell is worse)
    ci_low: float | None = None  # delta's two-sided interval at `confidence`: the test's one-sided bounds at its level
    ci_high: float | None = None
    confidence: float = 0.9  # 1 - 2 level: 0.9 at alpha 0.05, wider for a task stopped at an early look
    method: str | None = None  # "score" (paired 0/1: Tango's score test) or "t" (t over per-document means)
    p_value: float | None = None  # two-sided, no difference, from the same test as the interval
    exact_mcnemar_p: float | None = None  # single 0/1 samples only, beside the flips
    right_to_wrong: int = 0
    wrong_to_right: int = 0
    margin: float | None = None
    outcome: str | None = None  # equivalent | worse | inconclusive (analysis/equivalence.py)
    noninferior: bool | None = None  # the drop's one-sided 95% upper bound is below the margin
    p_worse: float | None = None  # one-sided p of "drop <= margin", and Holm-adjusted over the run's comparisons
    p_worse_adjusted: float | None = None
    settle_factor: float | None = None  # inconclusive: this many times both sides' samples settle it with 80%
    level: float | None = None  # the alpha the outcome was tested at (a sequential look's spent alpha, or alpha)
    p_equivalent: float | None = None  # TOST's p-value within the margin, unadjusted (the recommendation adjusts it)

    @property
    def drop_upper(self) -> float | None:
        """The drop's one-sided 95% upper bound (how much worse the cell can be, at most)."""
        return None if self.ci_low is None else -self.ci_low


class Agreement(BaseModel):
    identical: int
    total: int
    mean_first_difference: float | None = None  # in words, over the answers that differ


class KLEstimate(BaseModel):
    """One direction's per-token KL divergence, estimated without top-k: the mean over every sampled position of
    log p_from(x) - log p_to(x) for the token x that `from` sampled there (analysis/numerics.py). Its interval is a
    bootstrap over contexts (each context's positions resampled together), so it covers the mean over contexts like
    these, not over positions as if they were independent."""

    available: bool
    reason: str | None = None  # why not (available False), e.g. the engine gives no log-probabilities of samples
    estimate: float | None = None  # nats per token; unbiased, so it can come out slightly below 0 when nothing differs
    ci_low: float | None = None
    ci_high: float | None = None
    confidence: float = 0.9
    positions: int = 0
    contexts: int = 0
    own_samples_identical: int | None = None  # reverse: the cell's samples token for token the reference's (same seeds)
    floor: float | None = Field(None, description="reverse: the reference's own decode-time minus prefill "
                                "log-probability of its own samples, per token: what two passes of one engine differ "
                                "by, which a cell with the reference's own settings shows too; subtracted from the "
                                "estimate and its interval (None: not subtracted, a record from before it)")


# the numerics check's key: its matrix section, its record in a cell's `measures` and its figures in a drift's
NUMERICS = "distribution"


class DistributionDrift(BaseModel):
    """Distribution drift against the reference. `forward` (KL(ref || cell), on the reference's sampled contexts,
    both sides' echo) and `reverse` (KL(cell || ref), on the cell's own samples with their decode-time
    log-probabilities, the reference's echo) are the figures: unbiased, with intervals. The rest are the coarse
    top-k figures of the reference's contexts: `mean_kld` / `p99_kld` / `max_kld` are KL over the shared top-k plus a
    rest bucket, a LOWER BOUND (analysis/stats.py topk_kl), kept as a secondary column and for records before
    issue 26, which have nothing else."""

    available: bool
    reason: str | None = None
    positions: int = 0
    mean_kld: float | None = None  # coarse top-k KL, a lower bound
    p99_kld: float | None = None
    max_kld: float | None = None
    same_top_token: float | None = None  # share of positions where both put the same token first
    disjoint_topk: float | None = None  # share of positions whose top-k sets share no token (None: text-keyed records)
    forward: KLEstimate | None = None
    reverse: KLEstimate | None = None
    by_bucket: dict[int, "DistributionDrift"] = Field(default_factory=dict, description="the length buckets' "
                                                      "documents' figures, per bucket (issue 39); the figures above "
                                                      "leave those contexts out")

    def unbiased(self) -> list[tuple[str, KLEstimate]]:
        """The directions that have a figure: what the gate and the Pareto kld measure use."""
        return [(name, est) for name, est in (("KL(ref‖cell)", self.forward), ("KL(cell‖ref)", self.reverse))
                if est is not None and est.available and est.estimate is not None]


class SecondaryChange(BaseModel):
    """A figure other than accuracy, paired per document (share cut by the budget, empty answers, reasoning
    length): changed only when its test says so after adjustment AND the change is material."""

    task: str
    field: str
    reference: float | None = None
    cell: float | None = None
    p_value: float | None = None
    p_adjusted: float | None = None
    material: bool = False
    changed: bool = False


class OutputLength(BaseModel):
    """A cell's output tokens per answer against the reference's (analysis/outputlength.py): a cell that stops early
    looks faster. Per quality task, paired by document with an interval; per throughput scenario, the requests' mean
    as counted (a point: `low` / `high` None)."""

    task: str  # a quality task, or 'throughput:<scenario>'
    documents: int = 0  # documents paired (a scenario: the cell's completed requests)
    reference: float | None = None  # mean output tokens per answer
    cell: float | None = None
    ratio: float | None = None  # cell over reference
    low: float | None = None  # the ratio's two-sided interval at `confidence`
    high: float | None = None
    confidence: float = 0.9
    tolerance: float = 0.1  # within ±tolerance counts as the same length
    outcome: str = "undecided"  # within | shorter | longer | undecided

    @property
    def outside(self) -> bool:
        return self.outcome in ("shorter", "longer")


# keys a cell's record (or its drift) once held at its top level, before their measure moved into a folder of
# evalharness/measures/ (issue 59): a run saved before reads them into `measures`, so it resumes and re-renders alike
MOVED_TO_MEASURES = ("batching", "distribution")
# and keys that became a field of a measure's record: old key -> (the measure's key, the field)
MOVED_INTO_RECORDS = {"quality_alone": ("batching", "alone")}


def lift_moved_measures(data: Any) -> Any:
    """A saved record's top-level keys of MOVED_TO_MEASURES moved into its `measures`, and those of
    MOVED_INTO_RECORDS into their measure's record (kept only where that record is there: the two were written
    together); a record without them, or that is not a mapping, as it is."""
    if not isinstance(data, dict) or not any(key in data for key in (*MOVED_TO_MEASURES, *MOVED_INTO_RECORDS)):
        return data
    data = dict(data)
    measures = dict(data.get("measures") or {})
    for key in MOVED_TO_MEASURES:
        value = data.pop(key, None)
        if value is not None:
            measures.setdefault(key, value)
    for old, (key, field) in MOVED_INTO_RECORDS.items():
        value = data.pop(old, None)
        if value and isinstance(measures.get(key), dict):
            measures[key] = {**measures[key], field: value}
    data["measures"] = measures
    return data


class CellDrift(BaseModel):
    cell: str
    tasks: list[TaskDrift] = []
    paired: int = 0
    accuracy_delta: float | None = None  # pooled: the mean of the tasks' deltas, tasks weighted equally
    ci_low: float | None = None  # its 90% interval (normal, the tasks independent)
    ci_high: float | None = None
    p_value: float | None = None
    right_to_wrong: int = 0
    wrong_to_right: int = 0
    outcome: str | None = None  # worse if any task is; equivalent if every task is; else inconclusive
    worst_drop_upper: float | None = None  # the largest one-sided 95% upper bound of a task's drop
    agreement: Agreement | None = None
    # a calls task's invalid and refused shares against the reference's (analysis/secondary.py's rule)
    calls: list[SecondaryChange] = []
    # how a generation task's answers ended against the reference's (analysis/secondary.py ENDING_FIELDS): cut off,
    # looping, empty behind reasoning; the same rule
    endings: list[SecondaryChange] = []
    measures: dict[str, dict[str, Any]] = {}  # each measure's change by its key (evalharness/measures/comparisons.py)
    lengths: list[OutputLength] = []  # output tokens per answer against the reference's, per task and scenario

    _lift = model_validator(mode="before")(lift_moved_measures)  # a drift saved before its measures moved

    def numerics(self) -> DistributionDrift | None:
        """The numerics check's figures against the reference (measures/numerics/), None where it has none."""
        value = self.measures.get(NUMERICS)
        return None if value is None else DistributionDrift.model_validate(value)


class TaskNoise(BaseModel):
    """What an unchanged configuration produces on one task: the reference's repeats, split into two disjoint
    halves of its seeds and compared like any cell (the A/A row), and the within-document variance."""

    task: str
    repeats: int
    documents: int = 0
    within_doc_variance: float | None = None  # mean over documents of the unbiased variance across repeats
    seeds_a: list[int] = []
    seeds_b: list[int] = []
    aa: TaskDrift | None = None  # half b against half a
