"""One pairing of per-sample scores, for drift (run cell vs reference cell), the gate and baselines (run vs baseline).

lm-eval writes one sample row per document and filter (gsm8k: strict-match and flexible-extract), each row holding
every metric of the task (ifeval: prompt- and instruction-level), and a group task (mmlu_pro) writes its rows per
subtask, whose document ids restart at 0. So a record is keyed by all five:

    'subtask|doc_id|doc_hash|filter|metric'

and a document whose text changed never pairs with its old version. Drift, flips, the gate and `baseline save` pair
on the *headline* records: per subtask, the filter and metric its own config puts first (TaskScore.metric and
TaskScore.subtasks, 'metric,filter' as lm-eval names its results). Keys saved before this (baselines with
'doc_id|doc_hash') still load: the missing parts are the task itself and the baseline task's headline.

Pairing is by sample, never a difference of two means: equal accuracy can hide many flips. And only of the same
question: each sample keeps the hash of the prompt it was asked with (`prompt_key`: lm-eval's prompt_hash, with the
chat template switches folded in), and two sides whose prompts differ for a document are refused (PromptsDiffer,
naming the task and the first such document): a changed few-shot set, system prompt or chat template switch, or an
lm-eval upgrade that changed a prompt without bumping the task's version, would otherwise be compared silently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

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


class UnpairableMetric(ValueError):
    """A headline metric whose per-document values cannot be paired: one aggregated over the whole corpus (f1, bleu,
    matthews_corrcoef: each document holds a (gold, prediction) tuple), or values that are not numbers."""


# lm-eval's instruction-level metrics (ifeval's inst_level_*): each document holds one 0/1 per instruction and the
# task's figure pools every instruction of every document (utils.agg_inst_level_acc), not the documents' means
POOLED = "inst_level"


def pairable_aggregation(task: str, metric: str | None, aggregation: str | None) -> bool:
    """True when the metric is pooled over instructions; False for a mean over documents (or an aggregation not
    recorded, as in runs before it was); raises UnpairableMetric for a corpus-level aggregation."""
    if aggregation is None or aggregation == "mean":
        return False
    if POOLED in aggregation:
        return True
    raise UnpairableMetric(f"task {task}: metric {metric} is aggregated by {aggregation!r} over the whole corpus: its "
                           "per-document values cannot be paired (choose a headline aggregated by mean, or leave the "
                           "task out of drift and the gate)")


@dataclass(frozen=True)
class DocScore:
    """One document's score: a 0/1 or a number; for an instruction-level metric, its share of instructions right
    with the instructions as its weight (lm-eval pools instructions: docs [1] and [0, 0, 0] give 1/4, not 1/2)."""

    value: float
    weight: float = 1.0
    prompt: str | None = None  # the hash of the prompt the document was asked with (None: records before it was kept)


def _number(value: object) -> DocScore | None:
    """A per-sample metric as a document score: bools and numbers as they are; a non-empty list of numbers (an
    instruction-level metric, one entry per instruction) as its share with its length as weight; else None."""
    if isinstance(value, bool | int | float):
        return DocScore(float(value))
    if isinstance(value, list) and value and all(isinstance(v, bool | int | float) for v in value):
        return DocScore(sum(float(v) for v in value) / len(value), float(len(value)))
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


def sample_records(path: Path, task: str, headline: Headline | None = None) -> dict[str, DocScore]:
    """Every scored record of one task's samples.jsonl: (subtask, document, filter, metric) -> score, in file order.
    Rows written before subtasks were recorded belong to the task itself; a row without a filter (lm-eval always
    writes one; hand-made files may not) is taken as the headline's. A headline value that is no score (a tuple of
    a corpus-level metric) raises UnpairableMetric naming the task and metric."""
    out: dict[str, DocScore] = {}
    for row in load_samples(path):
        subtask = row.get("task") or task
        filt = row.get("filter") or (headline.of_subtask(subtask)[1] if headline else "none")
        for metric, value in (row.get("metrics") or {}).items():
            key = record_key(subtask, row.get("doc_id"), row.get("doc_hash"), filt, metric)
            number = _number(value)
            if number is not None:
                out[key] = DocScore(number.value, number.weight, row.get("prompt_key") or row.get("prompt_hash"))
            elif headline is not None and headline(key) and value is not None:
                raise UnpairableMetric(f"task {subtask}: metric {metric} holds {type(value).__name__} values per "
                                       f"document ({str(value)[:60]}), not scores: it is aggregated over the whole "
                                       "corpus and cannot be paired")
    return out


def headline_scores(path: Path, score: TaskScore) -> dict[str, DocScore]:
    """The headline records of a task's samples (what drift, the gate and baselines pair)."""
    headline = Headline.of(score)
    return {key: value for key, value in sample_records(path, score.task, headline).items() if headline(key)}


@dataclass(frozen=True)
class SideScores:
    """One side's headline scores of one task per document, over its repeats: the mean of the repeats that scored
    each document, its weight (instructions; 1 for a document-level metric), and each repeat's own scores."""

    means: dict[str, float]
    weights: dict[str, float]
    per_repeat: list[dict[str, float]]
    seeds: list[int | None]
    prompts: dict[str, str] = field(default_factory=dict)  # record -> prompt hash, where the records kept it

    @property
    def repeats(self) -> int:
        return len(self.per_repeat)

    @property
    def pooled(self) -> bool:
        return any(w != 1.0 for w in self.weights.values())


def _side(records: list[dict[str, DocScore]], seeds: list[int | None]) -> SideScores:
    first = records[0] if records else {}
    means = {}
    for key in first:
        values = [r[key].value for r in records if key in r]
        means[key] = sum(values) / len(values)
    return SideScores(means=means, weights={k: v.weight for k, v in first.items()},
                      per_repeat=[{k: v.value for k, v in r.items()} for r in records], seeds=seeds,
                      prompts={k: v.prompt for k, v in first.items() if v.prompt})


def _repeat_paths(score: TaskScore) -> list[tuple[str, int | None]]:
    seeds = {0: score.seed, **{r.repeat: r.seed for r in score.repeats}}
    return [(samples, seeds.get(repeat)) for repeat, samples, error in score.all_repeats() if samples and not error]


def side_scores(run_dir: Path, score: TaskScore, headline: Headline | None = None) -> SideScores:
    """Every finished repeat of a task, read by `headline` (default the task's own) and kept to its records."""
    headline = headline or Headline.of(score)
    paths = _repeat_paths(score)
    records = [{k: v for k, v in sample_records(run_dir / p, score.task, headline).items() if headline(k)}
               for p, _ in paths]
    return _side(records, [seed for _, seed in paths])


def merged_sides(sides: Sequence[SideScores]) -> SideScores:
    """Several launches' answers to one task as one side: every repeat of every launch, each document's mean over all
    the repeats that scored it (a confirmation's launches answer the same documents on their own seeds)."""
    per_repeat = [r for side in sides for r in side.per_repeat]
    keys = dict.fromkeys(k for side in sides for k in side.means)
    means = {k: sum(values) / len(values) for k in keys
             if (values := [r[k] for r in per_repeat if k in r])}
    weights = {k: w for side in reversed(sides) for k, w in side.weights.items()}
    prompts = {k: p for side in reversed(sides) for k, p in side.prompts.items()}
    return SideScores(means=means, weights={k: weights.get(k, 1.0) for k in means}, per_repeat=per_repeat,
                      seeds=[s for side in sides for s in side.seeds], prompts=prompts)


def side_of_values(values: dict[str, float], weights: dict[str, float] | None = None, repeats: int = 1,
                   prompts: dict[str, str] | None = None) -> SideScores:
    """A side known only by its per-document means (a baseline): `repeats` says how many draws each mean is over."""
    weights = weights or {}
    return SideScores(means=dict(values), weights={k: weights.get(k, 1.0) for k in values},
                      per_repeat=[dict(values)] * max(1, repeats), seeds=[None] * max(1, repeats),
                      prompts=dict(prompts or {}))


class PromptsDiffer(UnpairableMetric):
    """The two sides asked a document with different prompts: not the same question, so not paired."""


def check_prompts(task: str, before: dict[str, str], after: dict[str, str]) -> None:
    """Raise PromptsDiffer at the first record (in `before`'s order) both sides asked with a different prompt.
    Records that kept no prompt hash (older runs and baselines) are not checked."""
    for key, prompt in before.items():
        other = after.get(key)
        if other is not None and other != prompt:
            subtask, doc_id = key.split(SEP)[:2]
            where = f"task {task}" + (f" (subtask {subtask})" if subtask != task else "")
            raise PromptsDiffer(f"{where}: document {doc_id} was asked with a different prompt on each side (prompt "
                                f"hash {prompt[:12]} vs {other[:12]}): the few-shot examples, system prompt, chat "
                                "template switches or the task's lm-eval code changed; not paired (run both with "
                                "the same prompts, or save a new baseline)")


def subtask_of(key: str) -> str:
    return key.split(SEP, 1)[0]


def flip(before: float, after: float) -> str | None:
    """A document's flip: its mean crosses one half (for 0/1 metrics, right->wrong or wrong->right)."""
    if before >= 0.5 > after:
        return "right_to_wrong"
    if after >= 0.5 > before:
        return "wrong_to_right"
    return None


@dataclass(frozen=True)
class Paired:
    """Per-document scores both sides have, in the first side's order, their weights, and the flips between them
    (documents whose mean crosses one half: for 0/1 metrics, right->wrong and wrong->right)."""

    keys: list[str]
    before: list[float]
    after: list[float]
    weights: list[float] | None = None  # instructions per document for a pooled metric; None: documents weigh 1

    @property
    def right_to_wrong(self) -> int:
        return sum(flip(b, a) == "right_to_wrong" for b, a in zip(self.before, self.after))

    @property
    def wrong_to_right(self) -> int:
        return sum(flip(b, a) == "wrong_to_right" for b, a in zip(self.before, self.after))

    def flips(self) -> dict[str, str]:
        """key -> 'right_to_wrong' or 'wrong_to_right' for every flipped document (the HTML page lists them)."""
        return {k: f for k, b, a in zip(self.keys, self.before, self.after) if (f := flip(b, a)) is not None}

    def per_subtask(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for key in self.keys:
            counts[subtask_of(key)] = counts.get(subtask_of(key), 0) + 1
        return counts


def pair(before: dict[str, float], after: dict[str, float], weights: dict[str, float] | None = None) -> Paired:
    """The records of `before` (the headline records of the reference or the baseline) that `after` also has: the
    other side may hold every record of its task; only the keys of `before` decide what is compared."""
    keys = [key for key in before if key in after]
    pooled = weights is not None and any(weights.get(k, 1.0) != 1.0 for k in keys)
    return Paired(keys=keys, before=[before[k] for k in keys], after=[after[k] for k in keys],
                  weights=[weights.get(k, 1.0) for k in keys] if pooled and weights else None)
