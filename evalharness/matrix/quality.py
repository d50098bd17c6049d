"""The matrix's quality section (pydantic): the lm-eval tasks, their data, generation settings and repeats, and
each task's own settings over the section's. Pure; imports only matrix/base.py.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal, Union

from pydantic import Field, StrictInt, model_validator

from evalharness.matrix.base import TASK_PATTERN, _Strict, unknown_name


class TaskData(_Strict):
    """A task's data from files on this machine instead of the hub: lm-eval's own task config runs unchanged but for
    its dataset, loaded with the `format` builder from `data_files` (split -> path(s)); in a path, {task} and
    {dataset_name} name each leaf task of a group and its hub config (mmlu: one folder per subject)."""

    data_files: dict[str, Union[str, list[str]]] = Field(min_length=1)
    format: Literal["json", "csv", "parquet"] = "json"
    dataset_kwargs: dict[str, Any] = Field(default_factory=dict, description="more load_dataset arguments")


MaxGenToks = Annotated[int | None, Field(None, gt=0, description="generation budget; overrides the task config's")]
GenKwargs = Annotated[dict[str, Any], Field(default_factory=dict, description="e.g. {temperature: 0.6, top_p: 0.95, "
                                           "top_k: 20, do_sample: true}; override the task config's generation_kwargs")]
ChatTemplateKwargs = Annotated[dict[str, Any] | None, Field(None, description="api chat: sent with every request, e.g. "
                                                            "{enable_thinking: true}")]
ThinkEndToken = Annotated[str | None, Field(None, description="api chat, an engine without a reasoning parser: the "
                                            "answer is the text after this token (e.g. '</think>'), the rest "
                                            "reasoning")]
StopStrings = Annotated[Literal["answer", "engine"] | None, Field(None, description="api chat: where a task's stop "
                        "strings (lm-eval's `until`) act. answer (the chat default): never sent, they cut the answer "
                        "after the reasoning, so a stop string said while thinking ends nothing; engine: sent as "
                        "`stop`, as lm-eval does (engines match them inside the reasoning too)")]
GENERATION_KEYS = ("max_gen_toks", "gen_kwargs", "chat_template_kwargs", "think_end_token", "stop_strings")
Looks = Annotated[list[Union[StrictInt, Annotated[float, Field(gt=0, le=1)]]] | None, Field(
    None, min_length=1, description="the repeats after which a cell looks and stops each task that is settled "
    "(equivalent or worse, analysis/sequential.py): repeat counts ending at the task's repeats (e.g. [2, 4, 8] for 8), "
    "or fractions of each task's repeats ending at 1.0 (e.g. [0.25, 0.5, 1.0]); default 1, a quarter, a half and all "
    "of its repeats. The alpha is spent over the looks up to the planned repeats, so looks must end there")]
EquivalenceLooks = Annotated[list[Union[StrictInt, Annotated[float, Field(gt=0, lt=1)]]] | None, Field(
    None, description="more looks at which only the equivalence test may stop a task (the worse test keeps `looks`): "
    "repeat counts below the task's repeats, or fractions of them below 1.0; default [0.75], [] for none. Measured "
    "at the sm120 sizes (benchmarks/README.md): at equal per-task power of both tests against the fixed design, the "
    "look cuts an unchanged cell's tokens about 7% at the same repeats; against no such look at the same repeats it "
    "calls a task truly worse by half the margin equivalent about half a point to a point less often (the "
    "equivalence test's last look tests at 0.040 instead of 0.044)")]
# at equal per-task power of both tests the look cuts the tokens (issue 37; benchmarks/sequential_design.py)
DEFAULT_EQUIVALENCE_LOOKS: list[int | float] = [0.75]


def default_looks(repeats: int) -> list[int]:
    """The repeats after which a cell looks by default: 1, a quarter, a half and all of its planned repeats (one look
    when it runs once)."""
    return sorted({1, max(1, math.ceil(repeats / 4)), max(1, math.ceil(repeats / 2)), repeats})


def _scaled(fraction: float, repeats: int) -> int:
    """A fraction of a task's repeats as a repeat count, rounded up (at least 1)."""
    return max(1, math.ceil(fraction * repeats - 1e-9))


def resolve_equivalence_looks(extra: list[int | float], looks: list[int]) -> list[int]:
    """The equivalence-only looks as repeat counts against a task's resolved `looks` (its last the repeats):
    fractions scaled and rounded up; those that coincide with a look, or reach the repeats, are that look (dropped
    here); raises ValueError for a count at or past the repeats."""
    repeats = looks[-1]
    if any(isinstance(v, int) and not 1 <= v < repeats for v in extra):
        raise ValueError(f"equivalence looks must be repeat counts from 1 to below the task's {repeats} repeats, "
                         f"got {extra}")
    counts = {_scaled(v, repeats) if isinstance(v, float) else v for v in extra}
    return sorted(c for c in counts if c < repeats and c not in looks)


def default_plan(repeats: int, equivalence_looks: list[int | float] | None = None) -> tuple[list[int], list[int]]:
    """The looks of a task of `repeats` by default (with `equivalence_looks`, default the matrix's default), and
    which of them only the equivalence test looks at."""
    looks = default_looks(repeats)
    extra = resolve_equivalence_looks(DEFAULT_EQUIVALENCE_LOOKS if equivalence_looks is None else equivalence_looks,
                                      looks)
    return sorted(looks + extra), extra


def resolve_looks(looks: list[int | float], repeats: int) -> list[int]:
    """A task's looks as repeat counts: fractions (any float among them) scaled to its repeats and rounded up; raises
    ValueError unless they are strictly increasing and end exactly at `repeats` (looks that end earlier spend the
    whole alpha by then and the final analysis spends it again: 6.8-8.0% false "worse" against 4.6%, issue 37)."""
    if any(isinstance(v, float) for v in looks):
        if any(not 0 < v <= 1 for v in looks):
            raise ValueError(f"fractions of the repeats must lie in (0, 1], got {looks}")
        if list(looks) != sorted(set(looks)) or looks[-1] != 1:
            raise ValueError(f"fractions of the repeats must be strictly increasing and end at 1.0, got {looks}")
        return sorted({_scaled(v, repeats) for v in looks})
    if any(v < 1 for v in looks) or list(looks) != sorted(set(looks)):
        raise ValueError(f"looks must be strictly increasing repeat counts of at least 1, got {looks}")
    if looks[-1] != repeats:
        raise ValueError(f"looks {looks} end at {looks[-1]} repeats but the task runs {repeats}: they must end at its "
                         f"repeats (the last look is the planned end), or be fractions such as [0.25, 0.5, 1.0]")
    return list(looks)


class TaskSettings(_Strict):
    """One task's own settings (quality.task_settings.<task>), over the quality section's."""

    limit: int | None = Field(None, gt=0, description="documents (per subtask of a group), over quality.limit")
    skip: int | None = Field(None, ge=0, description="documents of the seeded order (per subtask) passed over before "
                             "`limit` is taken: a held-out sample (a confirmation launch passes over exploration's)")
    repeats: int | None = Field(None, ge=1, le=1000, description="over quality.repeats")
    reference_repeats: int | None = Field(None, ge=1, le=1000, description="over quality.reference_repeats")
    looks: Looks
    equivalence_looks: EquivalenceLooks
    api: Literal["completions", "chat"] | None = Field(None, description="over quality.api: a task scored through "
                                                       "chat (the chat template, a reasoning parser) beside "
                                                       "loglikelihood tasks through completions, in one matrix")
    max_gen_toks: MaxGenToks
    gen_kwargs: GenKwargs
    chat_template_kwargs: ChatTemplateKwargs
    think_end_token: ThinkEndToken
    stop_strings: StopStrings
    headline: str | None = Field(None, pattern=r"^[\w.-]+([,/][\w. -]+)?$", description="the figure the drift "
                                 "and the gate judge, as lm-eval names it: 'metric,filter' or 'metric/filter' (e.g. "
                                 "exact_match/flexible-extract); default the task config's first metric and filter. "
                                 "The other filters stay in the samples and in the report as format figures")


class QualitySection(_Strict):
    """Quality tasks (lm-eval) through the endpoint, one task at a time, per-sample records kept. The generation
    settings (budget, sampling, chat template switches) apply to every generation task unless overridden per task."""

    tasks: list[Annotated[str, Field(pattern=TASK_PATTERN)]] = Field(min_length=1)
    max_gen_toks: MaxGenToks
    gen_kwargs: GenKwargs
    chat_template_kwargs: ChatTemplateKwargs
    think_end_token: ThinkEndToken
    stop_strings: StopStrings
    data: dict[str, TaskData] = Field(default_factory=dict, description="task -> local data files (no hub)")
    task_settings: dict[str, TaskSettings] = Field(default_factory=dict, description="task -> its own settings")
    include_path: str | None = Field(None, description="folder of task YAMLs; default the shipped tasks/lm_eval")
    include_defaults: bool = Field(False, description="also index lm-eval's built-in tasks (gsm8k, ...; slower)")
    api: Literal["completions", "chat"] = "completions"
    tokenizer: Literal["local", "remote", "none"] | None = Field(
        None, description="how api completions splits a loglikelihood task's prompt into context and continuation "
        "tokens (multiple choice needs one; chat ignores it). local: the served model's tokenizer.json, read on this "
        "machine with the `tokenizers` library from the folder (or cached hub id) the engine reports, and checked "
        "against the engine's /tokenize before each task; remote: the engine's /tokenize and /tokenizer_info (vLLM "
        "with --enable-tokenizer-info-endpoint; SGLang has no /tokenizer_info); none: generation tasks only. "
        "Default: local where any cell is served by SGLang (remote cannot work there, and cells on both engines "
        "then split prompts alike), else remote: vLLM's own tokenizer whatever it was launched with (a --tokenizer "
        "override included), as before local existed")
    limit: int | None = Field(None, gt=0, description="documents per task (per subtask of a group), chosen by `subset`")
    subset: Literal["random", "first"] = Field("random", description="which documents `limit` keeps: random, a "
                                               "seeded random sample of each (sub)task, the same in every cell; "
                                               "first, lm-eval's own `limit` (the first N: for trying a matrix out)")
    subset_seed: int = Field(1234, description="the seed of the random subset")
    repeats: int = Field(1, ge=1, le=1000, description="samples per document in every cell: repeat k sends seed "
                         "`seed`+k with every request, the same seeds in every cell; the analysis pairs per-document "
                         "means over the repeats")
    reference_repeats: int | None = Field(None, ge=1, le=1000, description="repeats of the reference cell (default "
                                          "`repeats`): C cells share one reference, so about sqrt(C) times the "
                                          "cells' repeats is efficient; two or more give the A/A noise floor")
    seed: int = Field(1234, description="the seed of repeat 0 (lm-eval's own default)")
    looks: Looks
    equivalence_looks: EquivalenceLooks
    screen_documents: float = Field(0.25, gt=0, le=1, description="the share of each task's documents a screened "
                                    "cell answers where it runs the task once (its first look is then a batch of "
                                    "documents, not a repeat): the same seeded documents in every such cell")
    full_quality: bool = Field(False, description="run every look in every cell: no screening (by default a cell "
                               "not faster than the reference beyond the noise runs only the first look)")
    budget_hours: float | None = Field(None, gt=0, description="hours of generation the quality phase may cost in "
                                       "all: `run` refuses a matrix whose margins this cannot reach (`evalharness "
                                       "plan`), unless --over-budget")
    concurrency: int = Field(4, gt=0)
    retries: int = Field(2, ge=0, description="reruns of a failed task (its request journal resumes it: only "
                         "unanswered requests are sent again)")
    task_timeout_s: float = Field(3600.0, gt=0)

    @model_validator(mode="after")
    def _known_tasks(self) -> "QualitySection":
        for section in ("data", "task_settings"):
            for task in getattr(self, section):
                if task not in self.tasks:
                    raise ValueError(f"{section}.{task}: {unknown_name('task', task, self.tasks)}")
        for where, settings, chat in [("", self, self.uses_api("chat")),
                                      *((f"task_settings.{t}.", g, self.api_for(t) == "chat")
                                        for t, g in self.task_settings.items())]:
            if not chat and (settings.chat_template_kwargs or settings.think_end_token
                             or settings.stop_strings == "answer"):
                raise ValueError(f"{where}chat_template_kwargs, think_end_token and stop_strings: answer apply to "
                                 f"api: chat only{'' if where else ' (no task is scored through chat)'}")
        for task in self.tasks:
            own = self.task_settings.get(task)
            for name, resolve in (("looks", self._own_looks), ("equivalence_looks", self.equivalence_only_for)):
                key = f"task_settings.{task}.{name}" if own is not None and getattr(own, name) is not None else name
                try:
                    resolve(task)
                except ValueError as exc:
                    raise ValueError(f"{key} (task {task}, {self.repeats_for(task, reference=False)} repeats): "
                                     f"{exc}") from None
        return self

    def api_for(self, task: str) -> str:
        """The endpoint one task is scored through: its own `api`, else the section's."""
        own = self.task_settings.get(task)
        return (own.api if own is not None and own.api else None) or self.api

    def uses_api(self, api: str) -> bool:
        """Whether any task is scored through this endpoint."""
        return any(self.api_for(task) == api for task in self.tasks)

    def _own_looks(self, task: str) -> list[int]:
        """The looks of both tests at one task: its own looks, else the section's, resolved against its repeats
        (fractions scaled); default 1, a quarter, a half and all of them."""
        own = self.task_settings.get(task)
        looks = (own.looks if own is not None and own.looks else None) or self.looks
        repeats = self.repeats_for(task, reference=False)
        return resolve_looks(looks, repeats) if looks else default_looks(repeats)

    def equivalence_only_for(self, task: str) -> list[int]:
        """The repeat counts at which a cell looks at one task for equivalence only: its own equivalence_looks, else
        the section's (default none); none that coincides with a look of both tests."""
        own = self.task_settings.get(task)
        extra = own.equivalence_looks if own is not None and own.equivalence_looks is not None else None
        if extra is None:
            extra = self.equivalence_looks if self.equivalence_looks is not None else DEFAULT_EQUIVALENCE_LOOKS
        return resolve_equivalence_looks(extra, self._own_looks(task))

    def looks_for(self, task: str) -> list[int]:
        """Every repeat count after which a cell looks at one task: the looks of both tests and the equivalence-only
        ones (`equivalence_only_for`), in order."""
        return sorted(self._own_looks(task) + self.equivalence_only_for(task))

    def repeats_for(self, task: str, reference: bool) -> int:
        """How many repeats one task runs in a cell (the reference's own count where it is the reference)."""
        own = self.task_settings.get(task)
        repeats = (own.repeats if own and own.repeats else None) or self.repeats
        if reference:
            return (own.reference_repeats if own and own.reference_repeats else None) or self.reference_repeats \
                or repeats
        return repeats

    def settings_for(self, task: str) -> dict[str, Any]:
        """The worker's settings for one task (limit and generation): the section's, overridden by the task's own."""
        own = self.task_settings.get(task)
        merged = {key: getattr(self, key) for key in ("limit", "subset", "subset_seed", *GENERATION_KEYS)}
        if own is not None:
            merged.update({k: v for k, v in own.model_dump(exclude_unset=True).items()
                           if k not in ("gen_kwargs", "repeats", "reference_repeats", "looks", "equivalence_looks")})
            merged["gen_kwargs"] = {**self.gen_kwargs, **own.gen_kwargs}
        return merged
