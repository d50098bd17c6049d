"""The run's decision, computed once (analysis/decision.py, with the drift) and saved in results.json: what it ships
or why nothing, the single-stage recommendation where the run has no second stage, and the cells held back with
what held them. Every renderer (report.md, summary.md, report.html, the charts) reads it and decides nothing.
Pure data; imports pydantic only.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel


class Settle(BaseModel):
    task: str
    factor: float | None  # times the samples (None: no sample size settles it at this estimate)
    more_samples: int | None = None  # documents x repeats beyond the present ones
    unit: str = "answers (documents x repeats, both sides)"  # documents where the answers did not vary (the score
    # test: repeats add nothing)
    hours: float | None = None  # at the speed the cell's task ran


class Recommendation(BaseModel):
    cell: str | None = None  # the recommended cell (None: none)
    scenario: str | None = None  # the scenario read, where every cell is read at one
    point: str = ""  # the operating point in words ('at p90 TPOT ≤ 50 ms, concurrency 8')
    unit: str = "output tok/s"  # or goodput tok/s under an SLO
    at: str | None = None  # the step the recommended (or candidate) cell was read at
    reference_at: str | None = None
    ratio: float | None = None
    low: float | None = None
    high: float | None = None
    drop_upper: float | None = None
    speed: str | None = None  # the speed rule's words for the cell against the reference ('1.48x [1.31–1.67] faster')
    argv: list[str] = []
    env: dict[str, str] = {}
    why_none: str | None = None
    candidate: str | None = None  # the fastest faster cell whose accuracy is not settled
    settle: list[Settle] = []
    candidates: int = 0  # the faster cells the choice was made among (Holm's family)
    p_adjusted: float | None = None  # the recommended (or candidate) cell's equivalence p, Holm-adjusted over them
    alpha: float = 0.05  # the run's gate.alpha (analysis/equivalence.py DEFAULT_ALPHA)


class Held(BaseModel):
    """A cell credibly faster than the reference that was not shipped, and what held it back."""

    cell: str
    ratio: float | None = None  # its speed-up at the operating point (the speed rule's point estimate)
    reason: Literal["worse", "inconclusive", "choice", "slower", "not compared"] = "not compared"
    task: str | None = None  # worse / inconclusive: the task that held it (a matrix task before a length bucket)
    bound: float | None = None  # that task's drop, one-sided 95% upper bound
    margin: float | None = None
    p_adjusted: float | None = None  # choice: equivalent by its own tests, not once the choice is counted (Holm)
    candidates: int = 0


class GateRecord(BaseModel):
    """The gate's outcome against a baseline (`evalharness gate`, or `run` / `report` with --baseline), as it was
    decided: kept with the decision so the verdict box says it; a resumed run starts without it."""

    baseline: str  # the baseline file as given
    outcome: Literal["pass", "fail", "inconclusive"]
    cells: int = 0
    passed: int = 0
    failed: int = 0
    inconclusive: int = 0
    margin: float | dict[str, float] | None = None  # the equivalence margin the gate used (per task where it varies)
    alpha: float = 0.05
    first: str | None = None  # the first violation (fail) or unsettled task (inconclusive), in the gate's words
    warning: str | None = None  # the baseline measured on another kind of machine
    at: str = ""  # when it was decided (ISO time)


class Decision(BaseModel):
    """What the run ships. `kind`: single (the recommendation of a one-stage run), confirmed (a two-stage run's
    finalist its fresh launches confirmed), none (keep the reference), pending (a second stage not finished)."""

    kind: Literal["single", "confirmed", "none", "pending"] = "none"
    pick: str | None = None
    recommendation: Recommendation | None = None  # a one-stage run's full statement (analysis/recommend.py)
    candidate: Held | None = None  # no pick in one stage: the fastest faster cell, and what held it
    runner_up: Held | None = None  # the fastest other faster cell, and what held it
    gate: GateRecord | None = None  # the gate's outcome where a baseline was given (kept when the decision is redone)
