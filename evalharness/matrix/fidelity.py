"""The matrix's fidelity sections (issue 39): batch dependence (answers alone against inside a full batch) and drift
and speed by context length (the per-bucket tasks and scenarios the matrix adds). Pure; imports only matrix/base.py
and matrix/throughput.py.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator, Field, model_validator

from evalharness.matrix.base import LENGTH_SCENARIO_PREFIX, LENGTH_TASK_PREFIX, _Strict
from evalharness.matrix.throughput import RepeatRange, Scenario, _fixed_repeats


class LengthSection(_Strict):
    """Drift and speed by context length (phases/longcontext.py, issue 39): a seeded long-context task per bucket of
    prompt tokens, added to the quality tasks as eh_long_<B> (paired per document against the reference like every
    task), and a single-stream speed scenario per bucket, length-<B> (time to first token, decode speed and, for a
    speculative cell, acceptance at that length). Off unless enabled."""

    enabled: bool = False
    buckets: list[Annotated[int, Field(ge=64)]] = Field(
        default_factory=lambda: [256, 1024, 1920], min_length=1, description="prompt tokens of each bucket, "
        "increasing; the longest plus max_gen_toks must fit the served context (--max-model-len/--context-length)")
    documents: int = Field(20, gt=0, description="documents a bucket (the same in every cell)")
    depths: list[Annotated[float, Field(ge=0, le=1)]] = Field(
        default_factory=lambda: [0.1, 0.5, 0.9], min_length=1, description="where the asked fact sits in the "
        "haystack (0 its start, 1 its end), taken in turn over a bucket's documents")
    seed: int = Field(2039, description="the documents' seed")
    max_gen_toks: int = Field(8, gt=0, description="the answer's budget (a four-digit code)")
    tasks: bool = Field(True, description="the per-bucket quality tasks (needs a quality section)")
    speed: bool = Field(True, description="the per-bucket speed scenarios")
    numerics: int = Field(2, ge=0, description="documents of each bucket the numerics check samples from, whole "
                          "(distribution.max_context_tokens cuts only its own prompts): KL per bucket; 0 for none")
    speed_requests: int = Field(2, gt=0, description="requests of a speed repeat, one at a time")
    speed_output_len: int = Field(32, gt=0, description="tokens each speed request generates (ignore_eos)")
    speed_repeats: Annotated[RepeatRange, BeforeValidator(_fixed_repeats)] = Field(
        default_factory=lambda: RepeatRange(min=2, max=3), description="a speed scenario's repeats: N, or {min, max} "
        "(adaptive, as every scenario's)")

    @model_validator(mode="after")
    def _increasing(self) -> "LengthSection":
        if self.buckets != sorted(set(self.buckets)):
            raise ValueError(f"buckets must increase, each once: {self.buckets}")
        return self

    def task_names(self) -> list[str]:
        return [f"{LENGTH_TASK_PREFIX}{b}" for b in self.buckets] if self.enabled and self.tasks else []

    def scenarios(self) -> list[Scenario]:
        """One single-stream scenario per bucket, whose prompts are the bucket's documents (`length:<B>`)."""
        if not (self.enabled and self.speed):
            return []
        return [Scenario(name=f"{LENGTH_SCENARIO_PREFIX}{b}", concurrency=1, requests=self.speed_requests,
                         input_len=b, output_len=self.speed_output_len, prompts=f"length:{b}",
                         repeats=self.speed_repeats, warmup_requests=1 if i == 0 else 0)
                for i, b in enumerate(self.buckets)]


class BatchingSection(_Strict):
    """Batch dependence (phases/batching.py, issue 39): the same greedy prompts answered alone, one at a time, and
    inside a full batch of other requests; a cell whose answers change with batching more often than the reference's
    is flagged (analysis/batching.py). Off unless enabled."""

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
                             "answers at quality.concurrency (the drift's test and margin: analysis/loaddrift.py)")
    task_documents: int = Field(60, gt=0, description="documents of each of `tasks` answered one at a time (a "
                                "seeded subset, the same in every cell): 60 greedy documents that agree certify a "
                                "margin of 0.1 (40: inconclusive)")
