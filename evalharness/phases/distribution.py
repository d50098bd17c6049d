"""Distribution drift: the reference cell's greedy continuations scored in every cell with top-k log-probabilities.

The reference cell (first to run) writes a greedy continuation for each prompt of tasks/probes/distribution.jsonl.
Every cell, the reference included, then scores prompt + continuation through /v1/completions with echo and
logprobs=k (prompt log-probabilities, as vLLM and SGLang both return them), and keeps the top-k distribution at each
position of the continuation in cells/<id>/distribution.jsonl. Comparing two cells is then pure
(analysis/drift.py `compare_cells`): per position, KL(reference || cell) over the shared top-k and whether the top token
is the same.
Where the engine returns no prompt log-probabilities, the file records why, and the report says so instead of a number.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalharness.phases.openai_api import Endpoint
from evalharness.phases.retries import RequestFailed, map_in_threads
from evalharness.records.cellfiles import save_scored
from evalharness.records.measures import RequestTally, Scored

DEFAULT_PROMPTS = Path(__file__).resolve().parents[2] / "tasks" / "probes" / "distribution.jsonl"
TOP_K = 5


def load_prompts(path: Path = DEFAULT_PROMPTS) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def continuations(api: Endpoint, model: str, prompts: list[dict[str, str]], max_tokens: int = 32,
                  concurrency: int = 4) -> list[dict[str, str]]:
    """The reference's greedy continuations, a few requests at a time (RequestFailed if any fails)."""

    def one(item: dict[str, str]) -> dict[str, str]:
        answer = api.complete(model=model, prompt=item["prompt"], max_tokens=max_tokens, temperature=0.0)
        return {"id": item["id"], "prompt": item["prompt"], "continuation": answer.choices[0].text}

    return map_in_threads(one, prompts, concurrency)


def score(api: Endpoint, model: str, item: dict[str, str], k: int = TOP_K) -> Scored:
    """Top-k log-probabilities at each continuation position of prompt + continuation, from the engine's echo
    (vLLM's and SGLang's shape: echo with max_tokens=1 gives the prompt's tokens, offsets and top-k; all standard
    fields of openai's completion logprobs, read as the engine sent them)."""
    text = item["prompt"] + item["continuation"]
    try:
        answer = api.complete(model=model, prompt=text, max_tokens=1, temperature=0.0, echo=True, logprobs=k)
        logprobs = getattr(answer.choices[0], "logprobs", None)
    except RequestFailed as exc:
        return Scored(id=item["id"], error=str(exc))
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        return Scored(id=item["id"], error=f"bad_answer: {type(exc).__name__}: {exc}")
    offsets = getattr(logprobs, "text_offset", None) or []
    tokens = getattr(logprobs, "tokens", None) or []
    tops = getattr(logprobs, "top_logprobs", None) or []
    if not offsets or len(offsets) != len(tokens) or len(tops) != len(tokens):
        return Scored(id=item["id"], error="the engine returned no prompt log-probabilities with echo")
    start, end = len(item["prompt"]), len(text)
    scored = Scored(id=item["id"])
    for offset, token, top in zip(offsets, tokens, tops):
        if start <= offset < end and top:
            scored.tokens.append(token)
            scored.top.append({str(t): float(v) for t, v in top.items()})
    if not scored.top:
        scored.error = "no continuation positions in the echoed log-probabilities"
    return scored


def run_phase(base_url: str, model: str, cell_dir: Path, reference_dir: Path, is_reference: bool,
              timeout_s: float, prompts_path: Path | None = None, max_tokens: int = 32, retries: int = 2,
              hung_after: int = 3) -> tuple[dict[str, Any], RequestTally]:
    """The cell's part: the reference writes continuations first; every cell scores them. Returns a small summary
    and the tally of its requests."""
    with Endpoint(base_url, timeout_s, retries=retries, hung_after=hung_after) as api:
        cont_path = reference_dir / "continuations.jsonl"
        if is_reference:
            try:
                items = continuations(api, model, load_prompts(prompts_path or DEFAULT_PROMPTS), max_tokens)
            except (RequestFailed, KeyError, IndexError, TypeError, AttributeError) as exc:
                # a measurement this engine cannot give is reported as unavailable, not as a failed cell
                return {"scored": 0, "error": f"the reference's continuations failed: {type(exc).__name__}: {exc}"}, \
                    api.tally
            cont_path.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items), encoding="utf-8")
        elif not cont_path.exists():
            return {"scored": 0, "error": "the reference cell has no continuations (it did not run or failed)"}, \
                api.tally
        items = [json.loads(line) for line in cont_path.read_text(encoding="utf-8").splitlines() if line.strip()]
        scored = map_in_threads(lambda item: score(api, model, item), items, 4)
    save_scored(cell_dir / "distribution.jsonl", scored)
    errors = [s.error for s in scored if s.error]
    return {"scored": len(scored) - len(errors), "error": errors[0] if errors else None}, api.tally
