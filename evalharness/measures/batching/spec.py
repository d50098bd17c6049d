"""The batch-dependence check's matrix section, record and change (issue 39; a measure folder since issue 59).
Pydantic only.

Why: few engines are batch-invariant: a batched kernel may sum in another order, so a greedy answer can change with
what else is in flight; the reference's own rate is the floor.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from evalharness.measures.catalog import MeasureSpec
from evalharness.records.drift import TaskDrift
from evalharness.records.measures import TaskScore

KEY = "batching"
TITLE = "batch dependence"


class BatchingSection(BaseModel):
    """Batch dependence (measures/batching/, issue 39): the same greedy prompts answered alone, one at a time, and
    inside a full batch of other requests; a cell whose answers change with batching more often than the reference's
    is flagged (compare.py). Off unless enabled."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = False
    prompts: str | None = Field(None, description="JSONL of {id, prompt} or {id, messages}; default "
                                "tasks/throughput/natural.jsonl (its later lines are the batch's other requests)")
    count: int = Field(64, gt=0, description="prompts answered alone and in the batch (benchmarks/batching_flag.py: "
                       "at 16 a cell changing a quarter more of its answers is caught about 1 time in 8, at 64 almost "
                       "always)")
    max_tokens: int = Field(64, gt=0, description="greedy tokens per answer (the batch's other requests ask twice as "
                            "many, so the batch stays full while the prompts are answered)")
    concurrency: int = Field(16, gt=1, description="requests in flight in the batched pass: the deployment's "
                             "operating concurrency")
    tasks: list[str] = Field(default_factory=list, description="quality tasks answered again one request at a time, "
                             "on `task_documents` of their documents, and paired per document against the cell's own "
                             "answers at quality.concurrency (the drift's test and margin: compare.py `compare_run`)")
    task_documents: int = Field(60, gt=0, description="documents of each of `tasks` answered one at a time (a "
                                "seeded subset, the same in every cell): 60 greedy documents that agree certify a "
                                "margin of 0.1 (40: inconclusive)")


class BatchAnswer(BaseModel):
    """One prompt's greedy answer alone and inside a full batch (phase.py)."""

    id: str
    alone: str | None = None
    batched: str | None = None
    first_difference: int | None = None  # the first character where the two differ (None: identical)
    error: str | None = None

    @property
    def differs(self) -> bool:
        return self.error is None and self.alone != self.batched


class BatchDependence(BaseModel):
    """What batching did to a cell's greedy answers: each prompt alone (one request at a time) and again among
    `concurrency` requests in flight; and `tasks` answered again one request at a time (`alone`: their samples under
    cells/<id>/alone/), which compare.py pairs with the cell's own answers at quality.concurrency."""

    concurrency: int
    max_tokens: int
    answers: list[BatchAnswer] = []
    seconds: float = 0.0
    alone: list[TaskScore] = []

    def answered(self) -> list[BatchAnswer]:
        return [a for a in self.answers if a.error is None]

    def differing(self) -> int:
        return sum(a.differs for a in self.answers)


class BatchChange(BaseModel):
    """A cell's greedy answers changed by batching against the reference's own rate (compare.py)."""

    prompts: int  # prompts answered alone and batched on both sides
    reference: float  # share of the reference's answers that changed when batched
    cell: float
    p_value: float | None = None  # paired, two-sided
    flagged: bool = False  # credibly and materially more changed than the reference's
    concurrency: int | None = None
    mean_first_difference: float | None = None  # characters into the answer, over the cell's changed answers

    def summary(self) -> str:
        return (f"answers changed by batching {self.cell:.0%} of {self.prompts} prompts against the reference's "
                f"{self.reference:.0%}")


class LoadDrift(BaseModel):
    """One cell's answers to one task at the quality phase's concurrency against the same documents answered one
    request at a time (`tasks`), paired per document by the drift's test: `drift.reference` is the accuracy alone,
    `drift.cell` among `concurrency` requests in flight, its outcome against the task's margin, Holm over every such
    comparison of the run (compare.py `compare_run`)."""

    cell: str
    concurrency: int | None = None
    drift: TaskDrift


class LoadDrifts(BaseModel):
    """The run's quality among concurrent requests against alone, every cell (the reference included) decided as one
    family: kept in RunResult.measures["batching"], recomputed with the drift."""

    load_drift: list[LoadDrift] = []


SPEC = MeasureSpec(KEY, TITLE, BatchingSection, BatchDependence, BatchChange, across=LoadDrifts)
