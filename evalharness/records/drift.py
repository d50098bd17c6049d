"""A cell's drift from the run's reference cell, as saved in results.json (computed by analysis/drift.py)."""

from __future__ import annotations

from pydantic import BaseModel


class TaskDrift(BaseModel):
    task: str
    metric: str | None = None  # the reference's headline 'metric,filter' the records were paired on
    comparable: bool = True
    reason: str | None = None
    paired: int = 0
    subtasks_paired: dict[str, int] = {}  # a group's paired records per subtask
    reference: float | None = None
    cell: float | None = None
    delta: float | None = None  # cell - reference (negative: the cell is worse)
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None  # exact McNemar on per-sample correctness
    right_to_wrong: int = 0
    wrong_to_right: int = 0


class Agreement(BaseModel):
    identical: int
    total: int
    mean_first_difference: float | None = None  # in words, over the answers that differ


class DistributionDrift(BaseModel):
    available: bool
    reason: str | None = None
    positions: int = 0
    mean_kld: float | None = None
    p99_kld: float | None = None
    max_kld: float | None = None
    same_top_token: float | None = None  # share of positions where both put the same token first


class CellDrift(BaseModel):
    cell: str
    tasks: list[TaskDrift] = []
    paired: int = 0
    accuracy_delta: float | None = None  # pooled over every paired sample of every comparable task
    ci_low: float | None = None
    ci_high: float | None = None
    p_value: float | None = None
    right_to_wrong: int = 0
    wrong_to_right: int = 0
    agreement: Agreement | None = None
    distribution: DistributionDrift | None = None
