"""One pairing of per-sample scores, for drift (run cell vs reference cell), the gate and baselines (run vs baseline).

lm-eval writes one sample row per document and filter (gsm8k: strict-match and flexible-extract), each row holding
every metric of the task (ifeval: prompt- and instruction-level), and a group task (mmlu_pro) writes its rows per
subtask, whose document ids restart at 0. So a record is keyed by all five:

    'subtask|doc_id|doc_hash|filter|metric'

and a document whose text changed never pairs with its old version. Drift, flips, the gate and `baseline save` pair
on the *headline* records: per subtask, the filter and metric its own config puts first (TaskScore.metric and
TaskScore.subtasks, 'metric,filter' as lm-eval names its results). Keys saved before this (baselines with
'doc_id|doc_hash') still load: the missing parts are the task itself and the baseline task's headline.

Pairing is by sample, never a difference of two means: equal accuracy can hide many flips.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evalharness.records.cellfiles import load_samples
from evalharness.records.measures import TaskScore

SEP = "|"


def split_metric(metric_key: str | None) -> tuple[str, str]:
    """'exact_match,strict-match' -> ('exact_match', 'strict-match'); a metric without a filter is lm-eval's 'none'."""
    name, _, filt = (metric_key or "").partition(",")
    return name, filt or "none"


def record_key(task: str, doc_id: object, doc_hash: object, filt: str, metric: str) -> str:
    return SEP.join((str(task), str(doc_id), str(doc_hash), filt, metric))


def canonical_key(key: str, task: str, metric_key: str | None) -> str:
    """A saved key in today's form: an old 'doc_id|doc_hash' key belongs to the task itself and its headline."""
    parts = key.split(SEP)
    if len(parts) == 2:
        return record_key(task, parts[0], parts[1], *reversed(split_metric(metric_key)))
    return key


def canonical_scores(scores: dict[str, float], task: str, metric_key: str | None) -> dict[str, float]:
    return {canonical_key(key, task, metric_key): value for key, value in scores.items()}


def _number(value: object) -> float | None:
    """A per-sample metric as a number: bools and numbers as they are; a list (ifeval's instruction-level metrics,
    one entry per instruction) as its mean; anything else is not a score."""
    if isinstance(value, bool | int | float):
        return float(value)
    if isinstance(value, list) and value and all(isinstance(v, bool | int | float) for v in value):
        return sum(float(v) for v in value) / len(value)
    return None


@dataclass(frozen=True)
class Headline:
    """Which record of a document is the score: per subtask, the 'metric,filter' its config puts first."""

    task: str
    metric: str | None
    subtasks: dict[str, str | None]

    @classmethod
    def of(cls, score: TaskScore) -> Headline:
        return cls(score.task, score.metric, {name: sub.metric for name, sub in score.subtasks.items()})

    def of_subtask(self, subtask: str) -> tuple[str, str]:
        return split_metric(self.subtasks.get(subtask) or self.metric)

    def __call__(self, key: str) -> bool:
        subtask, _, _, filt, metric = key.split(SEP)
        return (metric, filt) == self.of_subtask(subtask)


def sample_records(path: Path, task: str, headline: Headline | None = None) -> dict[str, float]:
    """Every scored record of one task's samples.jsonl: (subtask, document, filter, metric) -> score, in file order.
    Rows written before subtasks were recorded belong to the task itself; a row without a filter (lm-eval always
    writes one; hand-made files may not) is taken as the headline's."""
    out: dict[str, float] = {}
    for row in load_samples(path):
        subtask = row.get("task") or task
        filt = row.get("filter") or (headline.of_subtask(subtask)[1] if headline else "none")
        for metric, value in (row.get("metrics") or {}).items():
            number = _number(value)
            if number is not None:
                out[record_key(subtask, row.get("doc_id"), row.get("doc_hash"), filt, metric)] = number
    return out


def headline_scores(path: Path, score: TaskScore) -> dict[str, float]:
    """The headline records of a task's samples (what drift, the gate and baselines pair)."""
    headline = Headline.of(score)
    return {key: value for key, value in sample_records(path, score.task, headline).items() if headline(key)}


def subtask_of(key: str) -> str:
    return key.split(SEP, 1)[0]


@dataclass(frozen=True)
class Paired:
    """Scores of the samples both sides have, in the first side's order, and the flips between them."""

    keys: list[str]
    before: list[float]
    after: list[float]

    @property
    def right_to_wrong(self) -> int:
        return sum(b >= 0.5 > a for b, a in zip(self.before, self.after))

    @property
    def wrong_to_right(self) -> int:
        return sum(a >= 0.5 > b for b, a in zip(self.before, self.after))

    def per_subtask(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for key in self.keys:
            counts[subtask_of(key)] = counts.get(subtask_of(key), 0) + 1
        return counts


def pair(before: dict[str, float], after: dict[str, float]) -> Paired:
    """The records of `before` (the headline records of the reference or the baseline) that `after` also has: the
    other side may hold every record of its task; only the keys of `before` decide what is compared."""
    keys = [key for key in before if key in after]
    return Paired(keys=keys, before=[before[k] for k in keys], after=[after[k] for k in keys])
