"""A baseline (baselines/*.json): per cell, each task's version and per-sample correctness keyed by document (and
subtask, filter, metric), the throughput per scenario, the versions it was measured with, and the gate's thresholds;
with its atomic I/O. Written by `baseline save`, read by `gate` (analysis/gate.py). Imports nothing but records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, ValidationError

from evalharness.records.io import atomic_write_text


class Thresholds(BaseModel):
    # the equivalence margin per task (a number, or task -> number with an optional 'default'); without it,
    # max_accuracy_drop is the margin (analysis/equivalence.py). A zero or negative margin or alpha in a baseline
    # file is bad input (exit 2), never a gate that cannot pass
    margin: Annotated[float, Field(gt=0)] | dict[str, Annotated[float, Field(gt=0)]] | None = None
    max_accuracy_drop: float | None = Field(0.05, gt=0)
    hard_accuracy_drop: float | None = Field(0.2, ge=0)
    alpha: float = Field(0.05, gt=0, lt=1)
    max_flips: int | None = Field(None, ge=0)
    max_kld: float | None = Field(None, ge=0)
    min_throughput_ratio: float | None = Field(None, gt=0)


class BaselineTask(BaseModel):
    version: Any = None
    metric: str | None = None
    value: float | None = None
    subtask_versions: dict[str, Any] = Field(default_factory=dict, description="a group's subtasks and versions")
    correct: dict[str, float] = Field(default_factory=dict, description="the headline records: "
                                      "'subtask|doc_id|doc_hash|filter|metric' -> score (analysis/pairing.py), the "
                                      "mean over the reference's repeats; baselines saved before keep "
                                      "'doc_id|doc_hash', read as the task's headline")
    repeats: int = Field(1, description="samples per document behind each mean in `correct`")
    seeds: list[int] = Field(default_factory=list, description="the seeds of those repeats")
    weights: dict[str, float] = Field(default_factory=dict, description="an instruction-level metric's instructions "
                                      "per document (pooled as lm-eval pools them); empty for a document-level one")
    aggregation: str | None = None
    higher_is_better: bool | None = None
    within_doc_variance: float | None = Field(None, description="the reference's variance across repeats, per "
                                              "document, averaged (its noise floor; None with one repeat)")
    prompts: dict[str, str] = Field(default_factory=dict, description="record -> the hash of the prompt it was "
                                    "asked with: a run whose prompts differ is refused, not compared")


class BaselineCell(BaseModel):
    status: str
    tasks: dict[str, BaselineTask] = {}
    throughput: dict[str, float] = {}  # scenario -> output tokens/s
    throughput_repeats: dict[str, list[float]] = {}  # scenario -> each repeat's output tok/s, where it was repeated
    engine_version: str | None = None


class Baseline(BaseModel):
    schema_version: Literal[1] = 1
    created: str
    matrix_name: str
    harness_version: str
    engine: str
    engine_version: str | None = None
    lm_eval_version: str | None = None
    git_revision: str | None = None
    machine: dict[str, Any] = Field(default_factory=dict, description="the run's machine (provenance.machine_info); "
                                    "empty in baselines saved before it was recorded")
    thresholds: Thresholds = Field(default_factory=Thresholds)
    cells: dict[str, BaselineCell]
    merged: list[str] = Field(default_factory=list, description="when the baselines this one was refreshed from were "
                              "created (`baseline save --merge`): its repeats pool their runs'")


class BaselineError(Exception):
    """A baseline file that is missing or not a baseline (exit 2)."""


def save_baseline(baseline: Baseline, path: Path) -> None:
    atomic_write_text(path, baseline.model_dump_json(indent=1) + "\n")


def load_baseline(path: Path) -> Baseline:
    try:
        return Baseline.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise BaselineError(f"{path}: no such baseline file") from None
    except ValueError as exc:
        if isinstance(exc, ValidationError):
            first = exc.errors()[0]
            raise BaselineError(f"{path}: not a baseline: {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
        raise BaselineError(f"{path}: not readable JSON: {exc}") from None
