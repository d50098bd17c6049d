"""The cases of a calls task (tasks/calls/data/<task>.jsonl, written by tasks/calls/make_cases.py): one request
body each (messages, and tools/tool_choice or response_format) and the expected call or JSON value. Owns which task
names are calls tasks; imports nothing of the harness but records."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

SHIPPED = Path(__file__).resolve().parents[3] / "tasks" / "calls" / "data"
KINDS = ("tools", "json")


class CallsDataError(ValueError):
    """A calls task's data file that is missing or holds something else (bad input: exit 2)."""


class Case(BaseModel):
    id: str
    kind: Literal["tools", "json"]
    way: str = ""  # how it asks: required | named | auto | none (tools), the extraction's shape (json)
    request: dict[str, Any]
    expected: Any = None  # tools: {"name", "arguments"} or None (no call due); json: the value
    version: int = 1

    @property
    def call_due(self) -> bool:
        return self.kind == "tools" and self.expected is not None

    def hash(self) -> str:
        """The case's identity for pairing: its request and expected answer (a changed case never pairs with its
        old version)."""
        body = json.dumps({"request": self.request, "expected": self.expected})
        return hashlib.sha256(body.encode()).hexdigest()

    def prompt_hash(self) -> str:
        """The hash of what is sent, as lm-eval's prompt_hash: two sides asked differently never pair. Key order
        kept: a schema's property order is the order the model is shown and writes them in."""
        return hashlib.sha256(json.dumps(self.request).encode()).hexdigest()

    def prompt_text(self) -> str:
        """The last user message: what a reader of the run sees the model was asked."""
        users = [m.get("content") for m in self.request.get("messages") or [] if m.get("role") == "user"]
        return str(users[-1]) if users else ""


def calls_task_path(task: str, include_path: str | None = None) -> Path | None:
    """The data file of a calls task by name: <include_path>/<task>.jsonl (a user's own cases) first, then the
    shipped tasks/calls/data/<task>.jsonl; None when the task is not a calls task (an lm-eval task)."""
    for folder in ([Path(include_path)] if include_path else []) + [SHIPPED]:
        path = folder / f"{task}.jsonl"
        if path.is_file():
            return path
    return None


def load_cases(path: Path) -> list[Case]:
    """Every case of a data file, in order; CallsDataError names the file and line of anything else."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise CallsDataError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    cases = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            cases.append(Case.model_validate_json(line))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "the line"
            raise CallsDataError(f"{path}, line {number}: {where}: {first.get('msg')} (expected a case: id, kind "
                                 f"'tools' or 'json', request, expected)") from None
    if not cases:
        raise CallsDataError(f"{path}: holds no case")
    ids = [c.id for c in cases]
    if len(set(ids)) != len(ids):
        raise CallsDataError(f"{path}: case ids repeat ({next(i for i in ids if ids.count(i) > 1)!r})")
    return cases
