"""One pairing of per-sample scores, for drift (run cell vs reference cell), the gate and baselines (run vs baseline).

A sample is keyed by 'doc_id|doc_hash' (the key baselines store), so a document whose text changed never pairs with
its old version. Pairing is by sample, never a difference of two means: equal accuracy can hide many flips.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evalharness.records.cellfiles import load_samples


def sample_key(row: dict) -> str:
    return f"{row.get('doc_id')}|{row.get('doc_hash')}"


def sample_value(row: dict, metric: str) -> float | None:
    value = (row.get("metrics") or {}).get(metric.split(",")[0])
    return float(value) if isinstance(value, (int, float)) else None


def sample_scores(path: Path, metric: str | None) -> dict[str, float]:
    """Per-sample scores of one task's samples.jsonl by key, in file order (a repeated key keeps its last row)."""
    rows = {sample_key(row): row for row in load_samples(path)}
    scores = {key: sample_value(row, metric or "") for key, row in rows.items()}
    return {key: value for key, value in scores.items() if value is not None}


@dataclass(frozen=True)
class Paired:
    """Scores of the samples both sides have, in the first side's order, and the flips between them."""

    before: list[float]
    after: list[float]

    @property
    def right_to_wrong(self) -> int:
        return sum(b >= 0.5 > a for b, a in zip(self.before, self.after))

    @property
    def wrong_to_right(self) -> int:
        return sum(a >= 0.5 > b for b, a in zip(self.before, self.after))


def pair(before: dict[str, float], after: dict[str, float]) -> Paired:
    keys = [key for key in before if key in after]
    return Paired(before=[before[k] for k in keys], after=[after[k] for k in keys])
