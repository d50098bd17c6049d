"""The run's decision, computed once (analysis/decision.py, with the drift) and saved in results.json: what it ships
or why nothing, the single-stage recommendation where the run has no second stage, the cells held back with what
held them, every cell's speed verdict and the Pareto front at the operating point, and the gate's outcome where a
baseline was given. Every renderer (report.md, summary.md, report.html, the charts) reads it and decides nothing.
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


class ParetoPoint(BaseModel):
    """One ready cell on the Pareto chart's axes (analysis/pareto.py fills it)."""

    cell: str
    throughput: float  # the figure at the operating point (output tok/s, or goodput tok/s under an SLO)
    drift: float
    low: float | None = None  # the range of the repeats' figures (None: measured once, no noise bar)
    high: float | None = None
    on_front: bool = False
    dominated_by: list[str] = []
    verdict: str | None = None  # accuracy: reference | equivalent | inconclusive | worse (None: the kld measure)
    drop_upper: float | None = None  # the largest one-sided 95% upper bound of a task's drop
    # the speed rule's side (analysis/speed.py): each repeat's figure, why it was disturbed, the adaptive plan
    rates: list[float] = []
    disturbed: list[str] = []
    plan: list[int] | None = None
    at: str | None = None  # the scenario or sweep step the figure was read at (None: no step meets the SLO)
    meets: bool | None = None  # whether it meets the SLO there (None: no SLO)
    kept_low: float | None = None  # the range of the repeats the speed rule kept (None: fewer than two kept)
    kept_high: float | None = None
    set_aside: int = 0  # repeats the speed rule set aside (the host was busy)


class Pareto(BaseModel):
    """The ready cells on the chart's axes: `throughput` for every ready cell in run order (None where it did not
    measure at the operating point), `points` for those that have both numbers, the front marked."""

    scenario: str | None  # the scenario read (a stated load's step; None where each cell has its own)
    measure: str
    throughput: dict[str, float | None]
    points: list[ParetoPoint]
    axis: str = ""  # what the throughput axis is: 'output tok/s in scenario single', 'goodput tok/s at ...'
    point_words: str = ""  # the operating point in words ('at p90 TPOT ≤ 50 ms, concurrency 8')


class SpeedWords(BaseModel):
    """A cell's speed verdict against the reference at the operating point (analysis/speed.py SpeedVerdict), with
    the words the report prints."""

    ratio: float | None  # None: a side without a positive rate (a cell whose engine died in its scenario)
    outcome: str  # faster | slower | equal | undecided
    low: float | None = None  # the one-sided bounds at `level`
    high: float | None = None
    level: float = 0.05
    text: str = ""  # '1.48x [90%: 1.31–1.67] faster'
    interval: str = ""  # '[99.1%: 1.10–1.24]', the level beside the ends


class Decision(BaseModel):
    """What the run ships. `kind`: single (the recommendation of a one-stage run), confirmed (a two-stage run's
    finalist its fresh launches confirmed), none (keep the reference), pending (a second stage not finished)."""

    kind: Literal["single", "confirmed", "none", "pending"] = "none"
    pick: str | None = None
    recommendation: Recommendation | None = None  # a one-stage run's full statement (analysis/recommend.py)
    candidate: Held | None = None  # no pick in one stage: the fastest faster cell, and what held it
    runner_up: Held | None = None  # the fastest other faster cell, and what held it
    gate: GateRecord | None = None  # the gate's outcome where a baseline was given (kept when the decision is redone)
    pareto: Pareto | None = None  # every ready cell at the operating point: figures, verdicts, the front
    speed: dict[str, SpeedWords] = {}  # cell -> its speed verdict against the reference (every cell measured there)
    steps: dict[str, dict[str, str]] = {}  # cell -> each load step both swept -> the speed rule's words on output tok/s
    crossovers: dict[str, str] = {}  # cell -> where it is faster at one load and slower at another, in words
    buckets: dict[str, dict[str, SpeedWords]] = {}  # cell -> length bucket (prompt tokens) -> its single-stream verdict
    # what qualifies the decision, in words: repeats set aside on a busy host, cells on several kinds of machine,
    # failed requests, the shipped or runner-up cell's answers outside the length tolerance, the gate's baseline from
    # another machine
    warnings: list[str] = []
