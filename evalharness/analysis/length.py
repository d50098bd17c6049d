"""Drift and speed by context length (issue 39): per length bucket of the matrix's `length:` section, a cell's
accuracy on the bucket's long-context task beside the reference's (the drift's own paired verdict on eh_long_<B>:
no new rule), and its single-stream speed there (time to first token, decode speed, the speed rule's verdict on
length-<B>, a speculative cell's acceptance). Also the envelope a cell's equivalence holds over: the longest bucket
up to which every bucket is equivalent, and the concurrency the tasks were answered at. Pure; reads records only.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalharness.analysis.speed import SpeedVerdict, scenario_verdict
from evalharness.matrix.base import LENGTH_SCENARIO_PREFIX, LENGTH_TASK_PREFIX
from evalharness.records.drift import DistributionDrift, TaskDrift
from evalharness.records.measures import ScenarioResult
from evalharness.records.run import CellResult, RunResult


@dataclass(frozen=True)
class BucketFigures:
    """One bucket of one cell (the reference's own row has no drift and no speed verdict)."""

    bucket: int
    accuracy: float | None  # the cell's mean on eh_long_<B> (its repeats pooled as the drift pools them)
    documents: int | None
    drift: TaskDrift | None  # against the reference: delta, interval, outcome
    prompt_tokens: float | None  # mean prompt tokens the engine counted in length-<B>
    ttft_s: float | None  # median time to first token, single stream
    decode_tok_s: float | None  # median per-request decode speed after the first token
    speed: SpeedVerdict | None  # output tok/s against the reference's length-<B> (analysis/speed.py)
    acceptance: float | None  # speculative acceptance length (tokens a step) in length-<B>, when the engine says
    numerics: DistributionDrift | None = None  # the numerics check on the bucket's documents (both KL directions)


def buckets_of(run: RunResult) -> list[int]:
    """The run's length buckets, from the tasks and scenarios its cells recorded, increasing."""
    found: set[int] = set()
    for cell in run.cells.values():
        found.update(int(t.task[len(LENGTH_TASK_PREFIX):]) for t in cell.quality
                     if t.task.startswith(LENGTH_TASK_PREFIX) and t.task[len(LENGTH_TASK_PREFIX):].isdigit())
        found.update(int(s.name[len(LENGTH_SCENARIO_PREFIX):]) for s in cell.throughput
                     if s.name.startswith(LENGTH_SCENARIO_PREFIX) and s.name[len(LENGTH_SCENARIO_PREFIX):].isdigit())
    return sorted(found)


def _scenario(cell: CellResult | None, bucket: int) -> ScenarioResult | None:
    if cell is None:
        return None
    return next((s for s in cell.throughput if s.name == f"{LENGTH_SCENARIO_PREFIX}{bucket}" and s.completed), None)


def _acceptance(scenario: ScenarioResult | None) -> float | None:
    value = scenario.engine.get("spec_mean_acceptance_length") if scenario is not None else None
    return float(value) if isinstance(value, (int, float)) else None


def bucket_figures(run: RunResult, cell_id: str, verdicts: bool = True) -> list[BucketFigures]:
    """Every bucket of one cell, with the reference's speed as the comparison (empty without buckets); `verdicts`
    False leaves the speed verdict out (a renderer reads the decided one, analysis/decision.py)."""
    cell = run.cells.get(cell_id)
    reference = run.cells.get(run.reference) if run.reference else None
    if cell is None:
        return []
    is_reference = cell_id == run.reference
    drift_numerics = None if is_reference or cell.drift is None else cell.drift.numerics()
    out = []
    for bucket in buckets_of(run):
        task = f"{LENGTH_TASK_PREFIX}{bucket}"
        score = next((t for t in cell.quality if t.task == task and t.value is not None), None)
        drift = None if is_reference or cell.drift is None else next(
            (t for t in cell.drift.tasks if t.task == task), None)
        values = [] if score is None else [score.value, *(r.value for r in score.repeats if r.value is not None)]
        accuracy = (drift.cell if drift is not None and drift.cell is not None else
                    sum(values) / len(values) if values else None)
        documents = score.n if score is not None else None
        mine, theirs = _scenario(cell, bucket), _scenario(reference, bucket)
        out.append(BucketFigures(
            bucket=bucket, accuracy=accuracy, documents=documents, drift=drift,
            prompt_tokens=(mine.prompt_tokens / mine.completed if mine is not None and mine.prompt_tokens else None),
            ttft_s=mine.ttft_s.p50 if mine is not None else None,
            decode_tok_s=mine.request_decode_tok_s.p50 if mine is not None else None,
            speed=None if is_reference or not verdicts else scenario_verdict(mine, theirs),
            acceptance=_acceptance(mine),
            numerics=None if drift_numerics is None else drift_numerics.by_bucket.get(bucket)))
    return out


def equivalent_up_to(figures: list[BucketFigures]) -> int | None:
    """The longest bucket up to which every bucket's task is equivalent to the reference's (None: not even the
    first, or no bucket was compared)."""
    longest = None
    for row in figures:
        if row.drift is None or row.drift.outcome != "equivalent":
            break
        longest = row.bucket
    return longest


def envelope_text(run: RunResult, cell_id: str, concurrency: int | None) -> str | None:
    """Where a cell's quality verdicts hold: 'equivalent up to 1,920 prompt tokens at concurrency 16; not measured
    beyond' (None when the run has no length buckets)."""
    figures = bucket_figures(run, cell_id, verdicts=False)  # the drift's outcomes only
    if not figures:
        return None
    load = f" at concurrency {concurrency}" if concurrency else ""
    longest = equivalent_up_to(figures)
    last = figures[-1].bucket
    if longest is None:
        first = figures[0]
        if first.drift is None:
            return None  # the cell never answered the buckets (it crashed, or stopped at its probes)
        said = first.drift.outcome or "not compared"
        return (f"by length: not shown equivalent at any length measured ({said} at {first.bucket:,} prompt "
                f"tokens{load})")
    if longest == last:
        return f"by length: equivalent up to {last:,} prompt tokens{load}; not measured beyond"
    after = next(f for f in figures if f.bucket > longest)
    said = after.drift.outcome if after.drift is not None and after.drift.outcome else "not compared"
    return f"by length: equivalent up to {longest:,} prompt tokens{load}, {said} at {after.bucket:,}"
