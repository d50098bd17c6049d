"""The numerics check's requests (issue 26): sampled contexts and their log-probabilities, token by token, by id.
The check's part in a cell (measures/numerics/phase.py) and the reference's echo of every cell's samples after the
cells (runner/reverse.py) both ask through these; the figures are computed later from the files they write, by
analysis/numerics.py. Imports no analysis, runner or render code.

- The reference cell (first to run) tokenizes each prompt of tasks/probes/distribution.jsonl (base-model text and
  pieces of the shipped tasks' prompts, some long: trimmed from the front to fit the served context, or the matrix's
  `distribution.max_context_tokens`) and samples a
  continuation of each at temperature 1 (seed SEED + i for context i, the same in every cell), with the
  log-probability of every sampled token: cells/<ref>/contexts.jsonl.
- Every cell, the reference included, scores those contexts by echo (prompt logprobs: a prefill pass) keeping, per
  continuation position, the token's own log-probability and the top-k: cells/<id>/distribution.jsonl (forward
  direction, KL(ref || cell)). Every other cell also samples its own continuation of each context the same way,
  with its decode-time log-probabilities: cells/<id>/own_samples.jsonl (reverse direction, KL(cell || ref)).
- After the cells, the reference is served once more and scores every cell's own samples by echo
  (`score_samples`, runner/reverse.py): cells/<id>/reverse_scored.jsonl.

Token ids are sent, never text, so both sides score the same tokens; the engines' logprob paths are
phases/logprobs.py's. Where an engine cannot give a figure, the files record why and the report says
"unavailable"."""

from __future__ import annotations

import json
from pathlib import Path

from evalharness.phases.logprobs import BadAnswer, LogprobPath, TooLong, fit_context
from evalharness.phases.retries import RequestFailed, map_in_threads
from evalharness.records.measures import Scored

DEFAULT_PROMPTS = Path(__file__).resolve().parents[2] / "tasks" / "probes" / "distribution.jsonl"
TOP_K = 5
SEED = 2600  # context i samples with seed SEED + i, in every cell
CONCURRENCY = 24  # every context at once: decoding is the cost, and a batch of 24 costs a CPU engine little more per
# step than one of 8 (vLLM CPU: 217 tok/s at 8 concurrent against 25 single-stream)
FALLBACK_CONTEXT = 1024  # the served context when the engine does not say (a conservative default)


def load_prompts(path: Path = DEFAULT_PROMPTS) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _guard(item_id: str, work) -> Scored:
    try:
        scored = work()
    except RequestFailed as exc:
        return Scored(id=item_id, error=str(exc))
    except (BadAnswer, KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
        return Scored(id=item_id, error=f"bad_answer: {exc}")
    scored.id = item_id
    return scored


def tokenize_within(path: LogprobPath, text: str, context: int) -> list[int]:
    """The text's ids; a text longer than the served context is refused by the engine (http_400, "maximum context
    length", not counted as a failed request), so its end is tokenized instead: the last 3, 2, then 1 characters
    per token of the context (a token of ASCII text is at least one character)."""
    for cut in (None, 3 * context, 2 * context):
        if cut is not None and len(text) <= cut:
            continue
        try:
            return path.tokenize(text if cut is None else text[-cut:])
        except TooLong:
            continue
    return path.tokenize(text[-context:])


def make_contexts(path: LogprobPath, prompts: list[dict[str, str]], max_tokens: int, context: int,
                  k: int = TOP_K, longest: int | None = None, whole: frozenset[str] = frozenset()) -> list[Scored]:
    """The reference's sampled contexts: each prompt tokenized, trimmed from the front to fit the served `context`
    with its continuation (and to `longest` tokens when given, except the prompts whose ids are in `whole`: the
    length buckets' documents, which are about their length), continued at temperature 1."""

    def one(pair: tuple[int, dict[str, str]]) -> Scored:
        i, item = pair
        ids: list[int] = []

        def work() -> Scored:
            ids[:] = fit_context(tokenize_within(path, item["prompt"], context), max_tokens, context)
            if longest is not None and item["id"] not in whole:
                ids[:] = ids[-longest:]
            return path.sample(ids, max_tokens, SEED + i, k)

        out = _guard(item["id"], work)
        out.prompt_ids, out.seed = ids, SEED + i
        return out

    return map_in_threads(one, list(enumerate(prompts)), CONCURRENCY)


def own_samples(path: LogprobPath, contexts: list[Scored], max_tokens: int, k: int = TOP_K) -> list[Scored]:
    """This cell's own continuation of each of the reference's contexts, same seed, with decode-time logprobs."""

    def one(ctx: Scored) -> Scored:
        out = _guard(ctx.id, lambda: path.sample(ctx.prompt_ids, max_tokens, ctx.seed or SEED, k))
        out.prompt_ids, out.seed = ctx.prompt_ids, ctx.seed
        return out

    return map_in_threads(one, [c for c in contexts if not c.error and c.prompt_ids], CONCURRENCY)


def score_samples(path: LogprobPath, samples: list[Scored], k: int = TOP_K) -> list[Scored]:
    """Echo scores of sampled continuations (the token's own logprob and top-k at each continuation position)."""
    usable = [s for s in samples if not s.error and s.token_ids and s.prompt_ids]
    return map_in_threads(lambda s: _guard(s.id, lambda: path.echo(s.prompt_ids, s.token_ids, k)), usable,
                          CONCURRENCY)
