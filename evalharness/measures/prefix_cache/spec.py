"""The prefix-cache check's matrix section, record and change (issue 60, 1). Pydantic only.

Why: only requests that hit the prefix cache regressed in sgl-project/sglang PR #23546 (GSM8K dropped for radix-cache
hits alone), and cold and warm log-probabilities differ by up to 3.4e-3 on vLLM (a determinism thread); every other
request the harness sends is cold or warm by accident of order. This check pairs the two on purpose.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from evalharness.measures.catalog import MeasureSpec

KEY = "prefix_cache"
TITLE = "prefix cache"


class PrefixCacheSection(BaseModel):
    """The prefix-cache check (measures/prefix_cache/, issue 60, 1): seeded prompts that share long prefixes, each
    answered greedy with the cache flushed (cold) and again with its prefix cached by a sibling prompt (warm); a cell
    whose answers change between the two more often than the reference's is flagged. Off unless enabled."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(False, description="run the prefix-cache check")
    count: int = Field(64, ge=2, description="prompts answered cold and warm (the batch-dependence flag's rule and "
                       "sizes: benchmarks/batching_flag.py, at 64 a cell changing a quarter more answers is caught "
                       "almost always, at 16 about 1 time in 8)")
    siblings: int = Field(4, ge=2, description="prompts that share each prefix: one of them warms the cache for the "
                          "next")
    prefix_words: int = Field(300, ge=50, description="words of the shared prefix (longer than any engine's cache "
                              "block, 16-128 tokens, so that the warm request hits it)")
    max_tokens: int = Field(32, gt=0, description="greedy tokens per answer")
    flush_path: str | None = Field(None, description="the endpoint that empties the prefix cache (POST); default the "
                                   "engine's own (vLLM /reset_prefix_cache, served with VLLM_SERVER_DEV_MODE=1, which "
                                   "the harness sets when this check is on; SGLang /flush_cache)")
    seed: int = Field(0, description="the prompts' seed: the same prompts in every cell of a run")


class CacheAnswer(BaseModel):
    """One prompt's greedy answer cold and warm, and how far their log-probabilities moved before they part."""

    id: str
    cold: str | None = None
    warm: str | None = None
    first_difference: int | None = None  # the first character where the two differ (None: identical)
    logprob_gap: float | None = None  # the largest |cold - warm| log-probability over the tokens both chose
    # the prompt tokens the engine says it served from its cache (usage.prompt_tokens_details.cached_tokens, where it
    # reports them: vLLM with --enable-prompt-tokens-details, SGLang): the hit, seen from the engine
    cached_tokens_cold: int | None = None
    cached_tokens_warm: int | None = None
    error: str | None = None

    @property
    def differs(self) -> bool:
        return self.error is None and self.cold != self.warm


class PrefixCacheRecord(BaseModel):
    """What the prefix cache did to one cell's greedy answers; `unavailable` says why nothing was measured (an
    endpoint that cannot flush its cache)."""

    kind: Literal["prefix_cache"] = "prefix_cache"
    flush: str  # how the cache was emptied: "POST /reset_prefix_cache"
    unavailable: str | None = None
    max_tokens: int = 0
    prefix_words: int = 0
    answers: list[CacheAnswer] = []
    seconds: float = 0.0

    def answered(self) -> list[CacheAnswer]:
        return [a for a in self.answers if a.error is None]

    def differing(self) -> int:
        return sum(a.differs for a in self.answers)


class PrefixCacheChange(BaseModel):
    """A cell's answers changed by the prefix cache against the reference's own rate (measures/prefix_cache/
    compare.py): the batch-dependence flag's rule, paired per prompt."""

    kind: Literal["prefix_cache"] = "prefix_cache"
    prompts: int
    reference: float  # the reference's share of answers that changed between cold and warm
    cell: float
    p_value: float | None = None
    flagged: bool = False
    reference_logprob_gap: float | None = None  # the median over prompts of the largest |cold - warm| log-probability
    cell_logprob_gap: float | None = None

    def summary(self) -> str:
        return (f"answers changed between a cold and a warm prefix cache {self.cell:.0%} of {self.prompts} prompts "
                f"against the reference's {self.reference:.0%}")


SPEC = MeasureSpec(KEY, TITLE, PrefixCacheSection, PrefixCacheRecord, PrefixCacheChange)
