"""What each phase measured, as saved in results.json: throughput scenarios, quality task scores, probe verdicts,
request tallies, crash reasons and log warnings, and the numerics check's sampled and scored continuations
(cells/<id>/contexts.jsonl, distribution.jsonl, own_samples.jsonl, reverse_scored.jsonl).

The phases fill these in; analysis and render read them. Imports no phase code.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel, Field, model_validator

STALL_WORDS = "its streams stalled"  # how phases/throughput/stats.py `judge_stalls` begins


class Percentiles(BaseModel):
    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None


def percentiles(values: list[float]) -> Percentiles:
    """Mean and linearly interpolated percentiles (numpy's default method); empty values give an empty summary."""
    if not values:
        return Percentiles()
    p50, p90, p99 = np.percentile(values, [50, 90, 99])
    return Percentiles(mean=float(np.mean(values)), p50=float(p50), p90=float(p90), p99=float(p99))


class RepeatFigures(BaseModel):
    """One repeat of a throughput scenario and what else ran while it was measured (runner/speedloop.py): the host
    beside the engine (serving/host.py) and the stream itself (phases/throughput/stats.py `stream_stalls`)."""

    tok_s: float  # this repeat's output tokens/s
    seconds: float
    requests: int
    completed: int
    disturbed: str = ""  # why the host sampler judged it disturbed ('' when clean): what crossed its limit, in words
    stalled: str = ""  # where its own streams stalled, in words: recorded, never a reason to set it aside (issue 57)
    host: dict[str, Any] = {}  # foreign_cores, steal_share, load_1m, gpu_others: serving/host.py `HostWindow`
    longest_gap_s: float | None = None  # the longest wait for a token in any stream of the repeat
    median_gap_s: float | None = None  # the repeat's median inter-token gap
    stalled_share: float | None = None  # share of the streams' time spent in gaps far above that median
    resumed: bool = False  # measured by an earlier launch of the cell and kept on --resume
    # each measured request's latencies, for goodput under any SLO (analysis/goodput.py): [ttft_s, tpot_s, e2e_s,
    # output_tokens]; a failed request is [None, None, None, 0] (it meets no SLO). Empty in runs before issue 38
    per_request: list[list[float | None]] = []

    @model_validator(mode="after")
    def _stalls_apart(self) -> "RepeatFigures":
        """A record written before issue 57 kept its streams' stalls among the reasons it was disturbed: read them
        as `stalled`, so that an old run and a resumed cell judge as a new one does."""
        parts = self.disturbed.split("; ") if self.disturbed else []
        stalls = [p for p in parts if p.startswith(STALL_WORDS)]
        if stalls:
            self.disturbed = "; ".join(p for p in parts if not p.startswith(STALL_WORDS))
            self.stalled = self.stalled or "; ".join(stalls)
        return self


class ScenarioResult(BaseModel):
    name: str
    concurrency: int | None = None
    request_rate: float | None = None
    input_len: int
    output_len: int
    requests: int
    completed: int
    errors: dict[str, int] = {}
    duration_s: float
    output_tokens: int
    prompt_tokens: int | None = None
    request_prompt_tokens: list[int | None] = Field(default_factory=list, description="the first requests' prompt "
                                                    "tokens as the server counted them, in the order sent (the same "
                                                    "prompts in every cell); empty in runs before it was recorded")
    output_tok_s: float  # aggregate: all output tokens over the wall time of the measured requests
    # per request: tokens after the first chunk over their time (single-stream figure)
    request_decode_tok_s: Percentiles
    ttft_s: Percentiles
    tpot_s: Percentiles
    itl_s: Percentiles
    e2e_s: Percentiles
    token_sources: dict[str, int] = {}  # requests by source: usage (per chunk), spread (a total spread), tokenizer
    tokens_per_chunk: float | None = None  # per arrival: events that came in one read count as one chunk
    engine: dict[str, Any] = {}  # the engine's own figures for this scenario, e.g. speculative acceptance
    # where the prompts came from: 'natural', 'task:NAME', a JSONL path, 'random'; None in runs before it was recorded
    # (those used random words)
    prompts: str | None = None
    repeat_tok_s: list[float] = []  # output tok/s of each repeat when the scenario ran more than once (mean above)
    # each repeat with what disturbed it, in order (empty in runs before issue 43: repeat_tok_s alone); the speed
    # rule (analysis/speed.py) leaves disturbed ones out, the figures above are over the repeats it kept
    repeat_figures: list[RepeatFigures] = []
    repeat_plan: list[int] | None = None  # [min, max] repeats of an adaptive scenario (None: a fixed number)
    stopped: str | None = None  # why its repeats stopped where they did (decided, the maximum, a hung engine)
    # the engine's per-request speculative figures summed over the measured requests that carried them (SGLang's
    # spec_tokens_details): {"requests", "completion_tokens", "verify_calls"}; {} when the engine sent none
    request_spec: dict[str, int] = {}

    def tok_s_range(self) -> tuple[float, float] | None:
        """(lowest, highest) output tok/s over the repeats: the noise bar; None with fewer than two repeats."""
        if len(self.repeat_tok_s) < 2:
            return None
        return min(self.repeat_tok_s), max(self.repeat_tok_s)

    def disturbed_repeats(self) -> list[tuple[int, RepeatFigures]]:
        """(1-based index, figures) of every repeat the host sampler judged disturbed while it was measured."""
        return [(i + 1, r) for i, r in enumerate(self.repeat_figures) if r.disturbed]

    def itl_interpolated(self) -> bool:
        """True when some request's tokens per chunk were not the server's own counts but a total spread evenly
        over its chunks (token source 'spread' or 'tokenizer'): its inter-token latencies are interpolated."""
        return any(source != "usage" and n for source, n in self.token_sources.items())


class GenerationStats(BaseModel):
    """How a task's answers were generated, per request (one per document and repeat; a document's filters share
    it): how many the token limit cut off (finish_reason "length") and how long the reasoning was. A backend that
    makes a model think twice as long, or truncate twice as often, drifts even at equal accuracy."""

    requests: int = 0  # generation requests whose answer was recorded (loglikelihood requests have none)
    truncated: int = 0  # finish_reason "length": cut off by max_gen_toks
    looping: int = 0  # the chain (reasoning and answer) ends inside a loop (phases/detectors/loops.py)
    truncated_looping: int = 0  # cut off while looping; truncated - truncated_looping: cut off while still reasoning
    with_reasoning: int = 0  # answers that carried reasoning (reasoning_content, or text before think_end_token)
    mean_completion_tokens: float | None = None  # usage.completion_tokens: reasoning and answer together
    mean_reasoning_chars: float | None = None  # over every recorded answer (0 for one without reasoning)
    mean_reasoning_tokens: float | None = None  # only where the engine reports completion_tokens_details
    empty: int = 0  # answers with no content (the reasoning aside): scored wrong whatever the thinking said
    empty_with_reasoning: int = 0  # of them, those whose reasoning is not empty: thinking that never reached an answer
    stop_string: int = 0  # ended by a stop string the engine matched (inside the reasoning too, when sent there)
    failed_attempts: int = 0  # request attempts that failed (HTTP error, silence past the timeout, cut stream)
    retried_requests: int = 0  # distinct requests with at least one failed attempt, sent again

    @property
    def truncated_share(self) -> float | None:
        return self.truncated / self.requests if self.requests else None

    def share(self, count: int) -> float | None:
        return count / self.requests if self.requests else None


class SubsetInfo(BaseModel):
    """Part of a task's documents: quality.limit (a seeded random subset, or the first N), and a screened cell's
    share of them, per leaf task."""

    seed: int | None  # None: the first documents (subset: first)
    documents: int  # documents scored, over all leaf tasks
    of: int  # documents in the whole task
    fraction: float | None = None  # a screened cell's share of the subset (quality.screen_documents); None: all of it
    skipped: int | None = None  # documents of the seeded order passed over first (a confirmation launch: exploration's)


class SubtaskScore(BaseModel):
    """One leaf task of a group (mmlu_pro_biology in mmlu_pro): its own version, headline and score."""

    version: Any = None
    metric: str | None = None  # its headline 'metric,filter', from its own config
    value: float | None = None
    n: int | None = None
    aggregation: str | None = None  # the headline metric's aggregation in the config ('mean', 'agg_inst_level_acc')
    higher_is_better: bool | None = None


class RepeatScore(BaseModel):
    """One more repeat of a task (quality.repeats), with its own seed sent on every request: repeat 0 is the
    TaskScore itself; repeat k lives in quality/<task>/repeat-<k>/."""

    repeat: int
    seed: int | None = None
    value: float | None = None
    attempts: int = 1
    seconds: float = 0.0
    error: str | None = None
    samples: str | None = None  # relative to the run folder
    generation: GenerationStats | None = None


class CallsSummary(BaseModel):
    """A calls task's own counts (measures/calls/): tool calls or JSON through the engine's parsers and grammar."""

    kind: str  # tools | json
    cases: int  # cases scored
    valid: int  # valid calls (valid_call) or valid JSON (valid_json), refused ones not
    refused: int = 0  # requests the engine refused (HTTP 4xx), scored 0 and counted here
    by_way: dict[str, dict[str, int]] = {}  # per way of asking (required, named, auto, none; a JSON shape): counts
    of: int | None = None  # cases in the task

    @property
    def valid_share(self) -> float | None:
        return self.valid / self.cases if self.cases else None


class TaskScore(BaseModel):
    task: str
    version: Any = None
    metric: str | None = None  # the headline 'metric,filter' from the task's own config (analysis/pairing.py)
    value: float | None = None  # for a group: lm-eval's aggregate (weighted by size where its config says so)
    stderr: float | None = None
    n: int | None = None
    attempts: int = 1
    seconds: float = 0.0
    error: str | None = None
    samples: str | None = None  # relative to the run folder
    subtasks: dict[str, SubtaskScore] = {}  # a group's leaf tasks; empty for a single task
    generation: GenerationStats | None = None
    aggregation: str | None = None  # the headline metric's aggregation in the task's config (None: not recorded)
    higher_is_better: bool | None = None  # from lm-eval's results (None: not recorded, taken as True)
    seed: int | None = None  # the seed sent with every request of repeat 0 (None: lm-eval's 1234, before repeats)
    repeats: list[RepeatScore] = []  # repeats 1..R-1, each with its own seed; the same seeds in every cell
    looks: list[int] = []  # the repeats after which the cell looked (analysis/sequential.py); [] before looks
    equivalence_only: list[int] = []  # those of the looks at which only the equivalence test looked
    subset: SubsetInfo | None = None  # a seeded random subset of the task's documents (None: all, or the first N)
    stopped: str | None = None  # why it ran fewer repeats than planned: settled at a look, or screened
    calls: CallsSummary | None = None  # a calls task's valid and refused counts (repeat 0); None for lm-eval's tasks

    def all_repeats(self) -> list[tuple[int, str | None, str | None]]:
        """(repeat, samples path, error) of every repeat, repeat 0 first."""
        return [(0, self.samples, self.error), *((r.repeat, r.samples, r.error) for r in self.repeats)]

    def finished_repeats(self) -> int:
        return sum(1 for _, samples, error in self.all_repeats() if samples and not error)


class ProbeOutput(BaseModel):
    id: str
    prompt: str
    output: str = ""  # the answer (message.content)
    reasoning: str | None = None  # a reasoning model's thinking (reasoning_content), judged apart from the answer
    finish_reason: str | None = None
    completion_tokens: int | None = None
    error: str | None = None
    garbage: bool = False
    findings: list[dict[str, Any]] = []


class ProbeSummary(BaseModel):
    """What the probe phase concluded for one cell; `offending` holds a few marked outputs for the report."""

    garbage: bool
    flagged: int
    total: int
    errors: int
    reason: str
    offending: list[ProbeOutput] = []
    seconds: float
    max_tokens: int | None = None  # the budget each probe was answered within
    reasoning: bool = False  # the cell reasons, so its probes had the reasoning budget


class RequestTally(BaseModel):
    """What one phase's requests went through."""

    requests: int = 0
    failed: int = 0  # after retries
    retried: int = 0  # attempts beyond the first
    kinds: dict[str, int] = {}  # every failed attempt, by kind
    hung: bool = False  # stopped early: requests in a row timed out

    def error_rate(self) -> float:
        return self.failed / self.requests if self.requests else 0.0

    def describe(self) -> str:
        kinds = ", ".join(f"{k} x{n}" for k, n in sorted(self.kinds.items(), key=lambda kv: -kv[1]))
        return f"{self.failed}/{self.requests} requests failed after {self.retried} retries ({kinds or 'no errors'})"


class CrashReason(BaseModel):
    kind: str
    line: str
    excerpt: str
    hint: str = ""


class LogWarning(BaseModel):
    key: str
    message: str
    values: dict[str, str] = {}
    count: int = 1


class Scored(BaseModel):
    """One continuation in one cell, per position of the continuation (never of the prompt): the log-probability of
    the token that is there and the top-k. Three files hold it (phases/distribution.py): the reference's sampled
    contexts (`contexts.jsonl`, with prompt_ids, the seed and the decode-time log-probabilities), a cell's echo of
    them (`distribution.jsonl`), a cell's own samples (`own_samples.jsonl`) and the reference's echo of those
    (`reverse_scored.jsonl`). Records written before issue 26 have text tokens, text-keyed top-k and no
    token_ids/logprobs: only the coarse top-k figure can be computed from them."""

    id: str
    tokens: list[str] = []  # the tokens' text where the engine gave it ("" otherwise)
    token_ids: list[int] = []  # the token at each position, by id (empty in records before issue 26)
    logprobs: list[float | None] = []  # that token's own log-probability (None where the engine gave none)
    top: list[dict[str, float]] = []  # per position: token -> logprob (top-k), keyed by token id where token_ids is set
    prompt_ids: list[int] = []  # the context before the continuation, by id (samples only: what to score again)
    seed: int | None = None  # the sampling seed (samples only); the same per context in every cell
    error: str | None = None
