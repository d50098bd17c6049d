"""Comparing cells with the reference cell: resolved settings that differ, accuracy drift with its interval and test,
flips, probe agreement, distribution drift, and the Pareto front of throughput against drift.

An engine that silently switches a backend (SGLang enabling NEXTN once changed the attention backend and halved the
speed, sglang#39515) shows up as a resolved difference that no flag of the cell asked for. Accuracy drift is paired
per sample (document id and hash), never a difference of two means: equal accuracy can hide many flips.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from evalharness import distribution as dist
from evalharness.probes import reference_outputs
from evalharness.stats import mcnemar_exact, paired_bootstrap


class SettingDifference(BaseModel):
    key: str
    reference: Any
    cell: Any
    asked: bool  # True when one of the cell's own flags or env vars that differ from the reference names this key


def _normal(name: str) -> str:
    return name.lstrip("-").replace("-", "_").lower()


def asked_names(cell_args: dict[str, Any], cell_env: dict[str, str], ref_args: dict[str, Any], ref_env: dict[str, str]) -> set[str]:
    """Normalised names of the flags and environment variables in which the cell differs from the reference."""
    names = {_normal(f) for f in set(cell_args) | set(ref_args) if cell_args.get(f) != ref_args.get(f)}
    names |= {_normal(e) for e in set(cell_env) | set(ref_env) if cell_env.get(e) != ref_env.get(e)}
    return names


def resolved_differences(
    reference: dict[str, Any], cell: dict[str, Any], asked: set[str] | None = None
) -> list[SettingDifference]:
    """Keys whose resolved value differs (a key missing on one side counts), sorted with unasked ones first."""
    asked = asked or set()
    diffs = []
    for key in sorted(set(reference) | set(cell)):
        ref_value, cell_value = reference.get(key), cell.get(key)
        if ref_value == cell_value:
            continue
        # 'args.speculative_config.method' is asked for by --speculative-config: look at every part of the key
        parts = [_normal(part) for part in key.replace("[", ".").split(".") if part]
        is_asked = any(name and (name in part or part in name) for name in asked for part in parts)
        diffs.append(SettingDifference(key=key, reference=ref_value, cell=cell_value, asked=is_asked))
    return sorted(diffs, key=lambda d: (d.asked, d.key))


# ---- drift against the reference, from the saved per-sample records ----------------------------------------------



class TaskDrift(BaseModel):
    task: str
    metric: str | None = None
    comparable: bool = True
    reason: str | None = None
    paired: int = 0
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
    distribution: dist.DistributionDrift | None = None


def load_samples(path: Path) -> dict[tuple, dict]:
    rows = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            rows[(row.get("doc_id"), row.get("doc_hash"))] = row
    return rows


def sample_value(row: dict, metric: str) -> float | None:
    value = (row.get("metrics") or {}).get(metric.split(",")[0])
    return float(value) if isinstance(value, (int, float)) else None


def task_drift(task: str, ref_score, cell_score, run_dir: Path) -> tuple[TaskDrift, list[float], list[float]]:
    """Pair one task's samples by (doc_id, doc_hash); refuse across task versions. Returns the drift and the paired
    per-sample scores (reference, cell) for pooling."""
    out = TaskDrift(task=task, metric=ref_score.metric)
    if ref_score.error or cell_score.error or not ref_score.samples or not cell_score.samples:
        out.comparable, out.reason = False, "a side has no samples (the task failed)"
        return out, [], []
    if ref_score.version != cell_score.version:
        out.comparable = False
        out.reason = f"task versions differ ({ref_score.version} vs {cell_score.version}): not paired"
        return out, [], []
    ref_rows, cell_rows = load_samples(run_dir / ref_score.samples), load_samples(run_dir / cell_score.samples)
    keys = [k for k in ref_rows if k in cell_rows]
    pairs = [(sample_value(ref_rows[k], ref_score.metric or ""), sample_value(cell_rows[k], ref_score.metric or "")) for k in keys]
    pairs = [(r, c) for r, c in pairs if r is not None and c is not None]
    if not pairs:
        out.comparable, out.reason = False, "no samples could be paired by document id and hash"
        return out, [], []
    refs, cells = [r for r, _ in pairs], [c for _, c in pairs]
    out.paired = len(pairs)
    out.reference, out.cell = sum(refs) / len(refs), sum(cells) / len(cells)
    out.delta, out.ci_low, out.ci_high = paired_bootstrap(refs, cells)
    out.right_to_wrong = sum(r >= 0.5 > c for r, c in pairs)
    out.wrong_to_right = sum(c >= 0.5 > r for r, c in pairs)
    out.p_value = mcnemar_exact(out.right_to_wrong, out.wrong_to_right)
    return out, refs, cells


def _first_difference(a: str, b: str) -> int:
    wa, wb = a.split(), b.split()
    for i, (x, y) in enumerate(zip(wa, wb)):
        if x != y:
            return i
    return min(len(wa), len(wb))


def probe_agreement(reference: list, cell: list) -> Agreement | None:
    """Share of greedy probe answers identical to the reference's, and where the others first differ (in words)."""
    ref = {o.id: o.output for o in reference if o.error is None}
    pairs = [(ref[o.id], o.output) for o in cell if o.error is None and o.id in ref]
    if not pairs:
        return None
    differing = [_first_difference(r, c) for r, c in pairs if r != c]
    return Agreement(identical=len(pairs) - len(differing), total=len(pairs),
                     mean_first_difference=sum(differing) / len(differing) if differing else None)


def cell_drift(run, cell_id: str, run_dir: Path) -> CellDrift:
    """Everything that says how far one cell drifted from the run's reference cell."""
    reference = run.cells[run.reference]
    cell = run.cells[cell_id]
    drift = CellDrift(cell=cell_id)
    ref_tasks = {t.task: t for t in reference.quality}
    pooled_ref: list[float] = []
    pooled_cell: list[float] = []
    for score in cell.quality:
        if score.task not in ref_tasks:
            continue
        task, refs, cells = task_drift(score.task, ref_tasks[score.task], score, run_dir)
        drift.tasks.append(task)
        pooled_ref += refs
        pooled_cell += cells
        drift.right_to_wrong += task.right_to_wrong
        drift.wrong_to_right += task.wrong_to_right
    if pooled_ref:
        drift.paired = len(pooled_ref)
        drift.accuracy_delta, drift.ci_low, drift.ci_high = paired_bootstrap(pooled_ref, pooled_cell)
        drift.p_value = mcnemar_exact(drift.right_to_wrong, drift.wrong_to_right)
    ref_probes = reference_outputs(run_dir / "cells" / run.reference / "probes.jsonl")
    cell_probes = reference_outputs(run_dir / "cells" / cell_id / "probes.jsonl")
    if ref_probes and cell_probes:
        drift.agreement = probe_agreement(list(ref_probes.values()), list(cell_probes.values()))
    ref_dist = dist.load(run_dir / "cells" / run.reference / "distribution.jsonl")
    cell_dist = dist.load(run_dir / "cells" / cell_id / "distribution.jsonl")
    if ref_dist or cell_dist:
        drift.distribution = dist.compare_cells(ref_dist, cell_dist)
    return drift


# ---- the Pareto front -------------------------------------------------------------------------------------------


class ParetoPoint(BaseModel):
    cell: str
    throughput: float
    drift: float
    on_front: bool = False
    dominated_by: list[str] = []


def pareto_front(points: list[ParetoPoint]) -> list[ParetoPoint]:
    """Mark the points no other point beats on both axes (throughput higher is better, drift lower is better)."""
    for p in points:
        p.dominated_by = [q.cell for q in points if q is not p and q.throughput >= p.throughput and q.drift <= p.drift
                          and (q.throughput > p.throughput or q.drift < p.drift)]
        p.on_front = not p.dominated_by
    return points
