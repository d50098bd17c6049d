"""The matrix's fidelity section (issue 39): drift and speed by context length (the per-bucket tasks and scenarios
the matrix adds). Batch dependence, once here, is a measure's (measures/batching/spec.py). Pure; imports only
matrix/base.py and matrix/throughput.py.
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
