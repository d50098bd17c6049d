"""The numerics check's phase (issue 26): sampled contexts and their log-probabilities, token by token, by id.

Owns the requests and the parsing of each engine's logprob answers; the figures are computed later from the files it
writes, by analysis/numerics.py. Imports no analysis, runner or render code.

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
import time
from pathlib import Path
from typing import Any

from evalharness.phases.logprobs import BadAnswer, LogprobPath, TooLong, fit_context, open_path
from evalharness.phases.retries import RequestFailed, map_in_threads
from evalharness.records.cellfiles import load_scored, save_scored
from evalharness.records.measures import RequestTally, Scored

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


def _first_error(*groups: list[Scored]) -> str | None:
    errors = [s.error for g in groups for s in g if s.error]
    return errors[0] if errors else None


def run_phase(base_url: str, model: str, cell_dir: Path, reference_dir: Path, is_reference: bool,
              timeout_s: float, prompts_path: Path | None = None, max_tokens: int = 96, retries: int = 2,
              hung_after: int = 3, path_kind: str = "completions", root_url: str | None = None,
              max_context_tokens: int | None = None,
              whole_prompts: list[dict[str, str]] | None = None) -> tuple[dict[str, Any], RequestTally]:
    """The cell's part (see the module docstring). `whole_prompts` ({id, prompt}): contexts sampled beside the
    prompts file's and never cut to `max_context_tokens` (the length buckets' documents). Returns a small summary and
    the tally of its requests."""
    begin = time.monotonic()
    path = open_path(path_kind, base_url, root_url or base_url.rsplit("/v1", 1)[0], model, timeout_s, retries,
                     hung_after)
    summary: dict[str, Any] = {"path": path_kind}
    try:
        ctx_path = reference_dir / "contexts.jsonl"
        if is_reference:
            context = path.context_length()
            summary["context"] = context or f"{FALLBACK_CONTEXT} (the engine did not say)"
            if max_context_tokens is not None:
                summary["max_context_tokens"] = max_context_tokens
            whole = list(whole_prompts or [])
            contexts = make_contexts(path, load_prompts(prompts_path or DEFAULT_PROMPTS) + whole, max_tokens,
                                     context or FALLBACK_CONTEXT, longest=max_context_tokens,
                                     whole=frozenset(p["id"] for p in whole))
            save_scored(ctx_path, contexts)
        elif not ctx_path.exists():
            return {**summary, "scored": 0, "error": "the reference cell has no contexts (it did not run, failed, "
                    "or ran before issue 26)"}, path.tally
        else:
            contexts = load_scored(ctx_path)
        echoed = score_samples(path, contexts)
        save_scored(cell_dir / "distribution.jsonl", echoed)
        own: list[Scored] = []
        if not is_reference:  # the reference's own samples are its contexts
            own = own_samples(path, contexts, max_tokens)
            save_scored(cell_dir / "own_samples.jsonl", own)
            (cell_dir / "reverse_scored.jsonl").unlink(missing_ok=True)  # scored again from these samples
        summary.update(contexts=len(contexts), scored=sum(1 for s in echoed if not s.error),
                       own_samples=sum(1 for s in own if not s.error),
                       positions=sum(len(s.token_ids) for s in contexts if not s.error),
                       error=_first_error(contexts, echoed, own), seconds=round(time.monotonic() - begin, 2))
        return summary, path.tally
    finally:
        path.close()
