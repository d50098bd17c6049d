"""The two-stage decision (issue 61): which cells exploration hands to confirmation, in which order, and what
confirmation's own data must show for its finalist to be shipped. Pure: figures in, verdicts out; the runner and the
report read it, benchmarks/two_stage.py measures it.

Why two stages: exploration measures every cell, and the fastest of many is the one whose noise flattered it most
(with every candidate truly 1.2x, the single-stage recommendation's printed lower bound lay above the truth in 31% of
runs at 10 candidates). Confirmation launches the finalist again against the reference launched again, interleaved,
on seeds exploration did not use, and its claim rests on that data alone, so the choice cannot inflate it and no
correction for the number of cells explored is needed: one finalist is tested at alpha (alpha / tries where several
are tried in a fixed order, Bonferroni).

- **Exploration's order** (`finalists`): cells not ruled out (crashed, garbage, worse on a task by exploration's own
  Holm-controlled verdict, or credibly slower), whose point estimate at the operating point is above the floor,
  fastest first. A cell below the floor would reach confirmation with little chance of being credibly faster by it;
  running none spends no launches and keeps the reference.
- **Speed over launches** (`speed_over_launches`): the launches are the unit. A launch's mean log rate (over its
  kept repeats: analysis/speed.py `kept_rates`, host-flagged repeats set aside) moves by the launch-to-launch
  variance, shared by both sides (it is the machine's), plus its side's own repeat noise; both are estimated (the
  first from the launches' spread less what the repeats explain, the second from each side's repeats) and the t's
  degrees of freedom come from Satterthwaite, so the interval counts what the single-stage rule left to its fixed
  floor, and a cell noisier than its reference keeps the level. The finalist's confirmation launches stand against
  the reference's confirmation launches only: exploration's reference launch also decided whether any cell looked
  fast enough to confirm, so it is not independent of the choice. The floor remains the claim's threshold
  ("credibly faster by 5%"); the launch-to-launch estimate is printed beside it.
- **Not worse** (`not_worse`): per confirmed task, the drop's one-sided upper bound (the gate's calibrated pass,
  analysis/stats.py `PairedEvidence.calibrated_p` on the side "below") below the task's margin at the try's level.
  Every task at that full level: an intersection-union test needs no adjustment for "every task". Equivalence and a
  gain are stated beside it; a gain never holds a cell back.
- **Confirmed** (`Confirmation.confirmed`): credibly faster by the floor over launches and not worse on every
  confirmed task. A shipped cell is wrong only if one of its tests passed falsely, each at the try's level, so the
  chance is at most alpha over all tries, however many cells exploration ranked.

Imports analysis.speed, analysis.stats, matrix.base and scipy only. The variance components are written here:
statsmodels' MixedLM has no per-side residual variance and gives Wald intervals without degrees of freedom, which at
two to four launches a side are far too narrow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from scipy.stats import t as student_t

from evalharness.analysis.speed import ALPHA, FLOOR, Side, SpeedVerdict, kept_rates
from evalharness.analysis.stats import PairedEvidence
from evalharness.matrix.base import LENGTH_TASK_PREFIX



@dataclass(frozen=True)
class Explored:
    """One candidate as exploration left it: its speed-up at the operating point (point estimate, cell over
    reference) and why it is out, if it is."""

    cell: str
    ratio: float
    ruled_out: str = ""


def finalists(explored: Sequence[Explored], tries: int, floor: float = FLOOR) -> list[Explored]:
    """The cells confirmation tries, in order: not ruled out, estimated faster than the floor, fastest first; at
    most `tries`."""
    hopeful = [e for e in explored if not e.ruled_out and math.isfinite(e.ratio) and e.ratio > 1 + floor]
    return sorted(hopeful, key=lambda e: -e.ratio)[:tries]


def confirm_tasks(matrix: Mapping[str, Any]) -> list[str]:
    """The tasks a confirmation's claim covers (a matrix as results.json keeps it): confirm.tasks, else the quality
    section's own tasks; a length bucket's only where listed (issue 61, 5)."""
    listed = (matrix.get("confirm") or {}).get("tasks")
    tasks = list((matrix.get("quality") or {}).get("tasks") or [])
    return list(listed) if listed else [t for t in tasks if not t.startswith(LENGTH_TASK_PREFIX)]


def try_level(alpha: float, tries: int) -> float:
    """The level each try tests at: alpha split evenly over the tries a matrix allows (Bonferroni)."""
    return alpha / max(1, tries)


@dataclass(frozen=True)
class LaunchSpeed:
    """The finalist's speed against the reference over launches."""

    verdict: SpeedVerdict  # kept = (the finalist's launches, the reference's launches)
    launch_sd: float | None  # launch-to-launch SD on the log scale, beyond the repeats' (None: too few launches)
    figures: tuple[tuple[float, ...], tuple[float, ...]] = ((), ())  # each launch's geometric mean: (finalist,
    # reference)

    def text(self) -> str:
        spread = "" if self.launch_sd is None else f", launches spreading {100 * self.launch_sd:.1f}% (SD)"
        launches = f"{self.verdict.kept[0]} launches against {self.verdict.kept[1]}"
        return f"{self.verdict.text()} ({launches}{spread})"


def kept_launch(rates: Sequence[float], disturbed: Sequence[str] = ()) -> list[float]:
    """One launch's kept repeats (analysis/speed.py: host-flagged ones set aside while two clean ones remain)."""
    return [r for r in kept_rates(Side(tuple(rates), tuple(disturbed))) if r > 0]


@dataclass(frozen=True)
class _SideSpread:
    """One side's launches on the log scale: each launch's mean, the launches' spread and the repeats' spread."""

    means: tuple[float, ...]
    between: float  # the sample variance of the launch means (0 with one launch)
    within: float  # the repeats' variance within a launch, pooled over the side's launches
    within_df: int
    repeats: float  # repeats a launch (harmonic mean)

    @classmethod
    def of(cls, launches: Sequence[Sequence[float]]) -> "_SideSpread":
        logs = [[math.log(r) for r in launch] for launch in launches if len(launch)]
        means = tuple(sum(l) / len(l) for l in logs)
        centre = sum(means) / len(means) if means else 0.0
        between = sum((m - centre) ** 2 for m in means) / (len(means) - 1) if len(means) > 1 else 0.0
        df = sum(len(l) - 1 for l in logs)
        squares = sum(sum((v - sum(l) / len(l)) ** 2 for v in l) for l in logs)
        repeats = len(logs) / sum(1 / len(l) for l in logs) if logs else 1.0
        return cls(means, between, squares / df if df else 0.0, df, repeats)


def speed_over_launches(finalist: Sequence[Sequence[float]], reference: Sequence[Sequence[float]], *,
                        level: float = ALPHA, floor: float = FLOOR) -> LaunchSpeed:
    """The speed verdict with launches as the unit. `finalist` and `reference`: each launch's kept repeats
    (kept_launch). A launch's mean log rate varies by the launch-to-launch variance L (shared: it is the machine's)
    plus its side's own repeat variance over its repeats, so the difference of the sides' means has variance
    sum over sides of (L + W_side / r_side) / launches_side. L is estimated from both sides' launch spreads less what
    their repeats explain (never below zero), W from each side's repeats, and the t's degrees of freedom by
    Satterthwaite over those mean squares: a cell whose repeats spread eight times the reference's keeps the level
    (a pooled t over launch means reached 9.5% at a true 1.05x with two launches a side)."""
    cell, ref = _SideSpread.of(finalist), _SideSpread.of(reference)
    kept = (len(cell.means), len(ref.means))
    if not cell.means or not ref.means:
        return LaunchSpeed(SpeedVerdict(ratio=math.nan, outcome="undecided", level=level, kept=kept), None)
    diff = sum(cell.means) / kept[0] - sum(ref.means) / kept[1]
    figures = (tuple(math.exp(m) for m in cell.means), tuple(math.exp(m) for m in ref.means))
    sides = [(s, n) for s, n in ((cell, kept[0]), (ref, kept[1]))]
    launch_df = sum(n - 1 for _, n in sides)
    if launch_df < 1:  # one launch a side: nothing says how far launches move
        return LaunchSpeed(SpeedVerdict(ratio=math.exp(diff), outcome="undecided", level=level, kept=kept), None,
                           figures)
    explained = sum((n - 1) * (s.between - s.within / s.repeats) for s, n in sides) / launch_df
    launch_var = max(0.0, explained)
    # the variance of the difference as a sum of mean squares: coefficient x mean square, with its df
    spread = sum(1 / n for _, n in sides)
    terms = [(s.within / (s.repeats * n), s.within_df) for s, n in sides]
    if explained > 0:
        terms = [(spread * (n - 1) / launch_df * s.between, n - 1) for s, n in sides if n > 1] + [
            (s.within * (1 / (s.repeats * n) - spread * (n - 1) / (launch_df * s.repeats)), s.within_df)
            for s, n in sides]
    variance = sum(v for v, _ in terms)
    if variance <= 0:
        return LaunchSpeed(SpeedVerdict(ratio=math.exp(diff), outcome="undecided", level=level, kept=kept),
                           math.sqrt(launch_var), figures)
    df = variance ** 2 / sum(v ** 2 / d for v, d in terms if d > 0 and v != 0)
    half = float(student_t.ppf(1 - level, df)) * math.sqrt(variance)
    ratio, low, high = math.exp(diff), math.exp(diff - half), math.exp(diff + half)
    outcome = "faster" if low > 1 + floor else "slower" if high < 1 / (1 + floor) else \
        "equal" if low >= 1 / (1 + floor) and high <= 1 + floor else "undecided"
    return LaunchSpeed(SpeedVerdict(ratio=ratio, outcome=outcome, low=low, high=high, level=level, kept=kept),
                       math.sqrt(launch_var), figures)


@dataclass(frozen=True)
class TaskClaim:
    """One confirmed task: the drop (reference minus finalist; positive is worse), its one-sided upper bound at the
    try's level, and whether that is below the margin."""

    task: str
    drop: float
    upper: float
    margin: float
    level: float
    not_worse: bool
    equivalent: bool  # beside it: the (1 - 2 level) interval inside +-margin
    documents: int = 0
    note: str = ""  # why no test was made (a side failed, nothing paired)

    def text(self) -> str:
        if self.note:
            return f"{self.task}: not compared ({self.note})"
        verdict = "not worse" if self.not_worse else "not shown not worse"
        extra = ", equivalent" if self.equivalent else ", gained" if self.drop < 0 and self.not_worse else ""
        return (f"{self.task}: {verdict}{extra} (drop {self.drop:+.3f}, upper bound {self.upper:+.3f} against "
                f"±{self.margin:g})")


def not_worse(task: str, evidence: PairedEvidence, margin: float, level: float) -> TaskClaim:
    """The gate's pass at `level`: H0 "drop >= margin" rejected by the calibrated test, its bound beside it."""
    passed = evidence.calibrated_p(margin, "below", level) < level
    low, high = evidence.equivalence_bounds(margin, level)
    return TaskClaim(task=task, drop=evidence.estimate, upper=high, margin=margin, level=level, not_worse=passed,
                     equivalent=-margin < low and high < margin, documents=evidence.n)


@dataclass(frozen=True)
class Confirmation:
    """One try: the finalist, its speed over launches and its tasks, at the try's level."""

    cell: str
    speed: LaunchSpeed
    tasks: tuple[TaskClaim, ...] = field(default=())
    level: float = ALPHA
    answers_expected: bool = True  # the matrix measures quality: a claim with no task tested is no claim
    figures: dict[str, tuple[float, ...]] = field(default_factory=dict)  # launch id -> its kept repeats, in `unit`
    unit: str = "output tok/s"  # what the speed is read in: goodput tok/s under an SLO, else output tok/s

    @property
    def confirmed(self) -> bool:
        return self.speed.verdict.faster and (bool(self.tasks) or not self.answers_expected) and \
            all(t.not_worse for t in self.tasks)

    def why_not(self) -> str:
        """What held the finalist back, in words ('' when confirmed)."""
        reasons = []
        if not self.speed.verdict.faster:
            reasons.append(f"speed {self.speed.text()}, not credibly faster by {FLOOR:.0%}")
        reasons += [t.text() for t in self.tasks if not t.not_worse]
        if not self.tasks and self.answers_expected:
            reasons.append("no confirmed task")
        return "; ".join(reasons)

