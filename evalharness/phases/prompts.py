"""Greedy chat prompts for the checks that answer the same prompt twice and compare (measures/batching/,
measures/prefix_cache/): reading a prompts file, what of a reply is compared (reasoning, then the answer), and where
two answers first differ. Pure but for reading the file; imports nothing of the package.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DEFAULT_PROMPTS = Path(__file__).resolve().parents[2] / "tasks" / "throughput" / "natural.jsonl"


class BatchPromptsError(ValueError):
    """The prompts file is missing, malformed or too short (bad input)."""


def load_prompts(path: Path, needed: int) -> list[tuple[str, list[dict[str, Any]]]]:
    """(id, messages) of every line ({id, prompt} or {id, messages}), at least `needed` of them."""
    try:
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except OSError as exc:
        raise BatchPromptsError(f"batching.prompts {path}: cannot be read ({exc.strerror or exc})") from None
    out = []
    for number, line in enumerate(lines, 1):
        try:
            row = json.loads(line)
            messages = row.get("messages") or [{"role": "user", "content": str(row["prompt"])}]
            out.append((str(row.get("id", number)), messages))
        except (ValueError, KeyError, AttributeError, TypeError):
            raise BatchPromptsError(f"batching.prompts {path}, line {number}: expected {{id, prompt}} or "
                                    "{id, messages}") from None
    if len(out) < needed:
        raise BatchPromptsError(f"batching.prompts {path}: {len(out)} prompts, the phase needs {needed} (count "
                                "prompts and at least one other request for the batch)")
    return out


def first_difference(a: str, b: str) -> int | None:
    """The first character where two answers differ; None when they are the same."""
    if a == b:
        return None
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def answer_text(message: Any) -> str:
    """What is compared between the two passes: the reasoning a reasoning parser split off (a thinking model's
    budget is often all thinking, and its answer then empty on both sides), then the answer."""
    extra = getattr(message, "model_extra", None) or {}
    reasoning = extra.get("reasoning_content") or extra.get("reasoning") or ""
    content = getattr(message, "content", None) or ""
    return f"{reasoning}\n</think>\n{content}" if reasoning else content
