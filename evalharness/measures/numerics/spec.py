"""The numerics check's matrix section, record and change (issue 26). Pydantic only.

The change, records/drift.py's DistributionDrift, stays beside the drift it belongs to: the gate's KL limit, the
Pareto table's KL column and the length buckets read it from there (CellDrift.numerics()) without naming this folder.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from evalharness.measures.catalog import MeasureSpec
from evalharness.records.drift import NUMERICS, DistributionDrift

KEY = NUMERICS
TITLE = "numerics"


class DistributionSection(BaseModel):
    """The numerics check (measures/numerics/, analysis/numerics.py): per-token KL divergence in both directions,
    on the reference's and each cell's own samples at temperature 1."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    prompts: str | None = Field(None, description="JSONL of {id, prompt}; default tasks/probes/distribution.jsonl")
    max_tokens: int = Field(96, gt=0, description="length of every sampled continuation (the reference's contexts "
                            "and each cell's own samples)")
    max_context_tokens: int | None = Field(
        None, gt=0, description="the longest context the check sends: a longer prompt is trimmed from the front to "
        "this many tokens (default: what the served context leaves room for). Prefill is most of the check's cost "
        "with long contexts: the shipped set's two long ones (about 2,000 and 1,300 tokens) took 50 of its 67 s on a "
        "float32 reference and 75 of 121 s in bfloat16 on a CPU without AVX-512")


class NumericsRecord(BaseModel):
    """What one cell's numerics check wrote beside its files (cells/<id>/contexts.jsonl, distribution.jsonl,
    own_samples.jsonl): how it asked and how much it got; the figures are computed from the files (compare.py)."""

    path: str | None = Field(None, description="the engine's logprob path (phases/logprobs.py); None: the engine "
                             "gives no log-probabilities by token id, and `error` says so")
    context: int | str | None = Field(None, description="the reference's served context, as the engine said it")
    max_context_tokens: int | None = None  # the reference's: the section's cut, where it set one
    contexts: int | None = None
    scored: int = 0
    own_samples: int | None = None
    positions: int | None = None
    error: str | None = None
    seconds: float | None = None


SPEC = MeasureSpec(key=KEY, title=TITLE, section=DistributionSection, record=NumericsRecord, change=DistributionDrift)
