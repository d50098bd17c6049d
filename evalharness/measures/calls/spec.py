"""The calls-modes check's matrix section, record and change (issue 60, 2). Pydantic only.

Why: strict-JSON validity was 14.12/24 before a fix and 23.38/24 after it (vllm PR #44993), JSON was corrupted in
75-100% of answers at concurrency 8-32 (the same thread; sgl-project/sglang #18605), and tool-call bugs appear only
when streaming (vllm #55082, #47901); the calls tasks themselves run at one concurrency, not streamed.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evalharness.measures.catalog import MeasureSpec

KEY = "calls_modes"
TITLE = "calls under load and streamed"
# the modes, each (streamed, under load); "alone" is one request at a time, not streamed
MODES = {"alone": (False, False), "streamed": (True, False), "load": (False, True), "load_streamed": (True, True)}
# each mode against the mode it differs from by one thing: streaming at one concurrency, then load
PAIRS = (("alone", "streamed"), ("load", "load_streamed"), ("alone", "load"), ("streamed", "load_streamed"))
OUTCOMES = ("valid", "invalid", "refused", "error")


class CallsModesSection(BaseModel):
    """Calls under load and streamed (measures/calls/, issue 60, 2): each calls task's cases answered streamed
    and not, one request at a time and at `concurrency`, each mode paired per case against its other mode (streamed
    against not, under load against alone); a cell whose valid share falls is flagged. Off unless enabled."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(False, description="run the calls-modes check")
    tasks: list[str] = Field(default_factory=lambda: ["eh_tools", "eh_json"], min_length=1, description="calls "
                             "tasks (tasks/calls/data/<task>.jsonl, or quality.include_path's)")
    cases: int = Field(48, gt=0, description="the first cases of each task, answered in every mode (the "
                       "changed-answers rule: benchmarks/batching_flag.py, at 64 a quarter more caught almost always)")
    concurrency: int = Field(16, gt=1, description="requests in flight under load: the deployment's operating "
                             "concurrency")
    max_tokens: int = Field(256, gt=0, description="tokens per answer, as the calls tasks' default")
    chat_template_kwargs: dict[str, Any] | None = Field(None, description="sent with every request, as a task's own "
                                                        "(quality.tasks.<task>.chat_template_kwargs): for example "
                                                        "{enable_thinking: false} where a reasoning parser would "
                                                        "take the whole reply as thinking")


class CaseModes(BaseModel):
    """One case's outcome in each mode: valid, invalid (not a valid call / valid JSON), refused (HTTP 4xx), or error
    (failed after retries, left out of the pairing)."""

    id: str
    outcomes: dict[str, Literal["valid", "invalid", "refused", "error"]] = {}


class TaskModes(BaseModel):
    task: str
    kind: str  # "tools" or "json"
    cases: list[CaseModes] = []

    def valid(self, mode: str) -> int:
        return sum(c.outcomes.get(mode) == "valid" for c in self.cases)

    def answered(self, mode: str) -> int:
        return sum(c.outcomes.get(mode) not in (None, "error") for c in self.cases)


class CallsModesRecord(BaseModel):
    kind: Literal["calls_modes"] = "calls_modes"
    concurrency: int = 0
    tasks: list[TaskModes] = []
    unavailable: str | None = None  # why nothing was measured (a task that is not a calls task)
    seconds: float = 0.0


class ModeChange(BaseModel):
    """One task's valid share in one mode against its paired mode, over the cases answered in both."""

    task: str
    base: str
    mode: str
    cases: int
    base_valid: float
    mode_valid: float
    p_value: float | None = None
    flagged: bool = False


class CallsModesChange(BaseModel):
    """The cell's own modes, each pair judged by the changed-answers rule (a fall in the valid share), beside the
    reference's figures for the same pairs."""

    kind: Literal["calls_modes"] = "calls_modes"
    changes: list[ModeChange] = []
    reference: list[ModeChange] = []
    flagged: bool = False

    def summary(self) -> str:
        worst = [c for c in self.changes if c.flagged]
        return "; ".join(f"{c.task} valid {c.mode_valid:.0%} {c.mode.replace('_', ' + ')} against {c.base_valid:.0%} "
                         f"{c.base.replace('_', ' + ')} ({c.cases} cases)" for c in worst)


SPEC = MeasureSpec(KEY, TITLE, CallsModesSection, CallsModesRecord, CallsModesChange)
