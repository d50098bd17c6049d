"""The two-stage decision (issue 61) under independent draws of one engine, at the sm120 matrix's sizes: how often it
ships a bad cell, how often its printed lower bound flatters the cell it ships, and how often it ships a good one.

Model, per simulated run:
- **speed**: every launch has its own offset, log-normal with `launch_sd` (what relaunching an unchanged
  configuration does: this CPU's float32 reference moved 26.6-29.1 tok/s over three launches, 2026-12-06), and each
  repeat in it log-normal noise `cv` around it (0.5%: a GPU; 1.5%; 8%: this CPU at one stream). Exploration measures
  each of K candidates and the reference once, `explore_repeats` repeats; confirmation launches the finalist
  `launches` times against as many fresh launches of the reference, `speed_repeats` repeats each;
- **answers** (the accuracy half): benchmarks/recommendation.py's Beta model at sm120's tasks (SM120_TASKS: accuracy
  0.95 / 0.80 / 0.82 / 0.88, consistency 0.5, margins 0.02 / 0.03). Exploration: each cell answers its documents
  once, the reference `explore_reference_repeats` times; a cell is ruled out where exploration's own verdict calls
  it worse (Holm over every cell x task, as the drift does); confirmation: documents exploration did not answer,
  fresh answers, each task's own repeats a side.

Decisions are the package's: analysis/confirm.py (`finalists`, `try_level`, `launch_figure`,
`speed_over_launches`, `not_worse`), analysis/stats.py (`paired_evidence`, `holm`). The single-stage line is
analysis/speed.py `speedup` on one launch a side (today's recommendation's speed half, fixed repeats).

Truths (each line K candidates):
- `floor`: every candidate truly 1.05x and unchanged: any shipped cell is a false recommendation (not faster by
  the floor); the speed half's worst case;
- `all 1.2x`: every candidate truly 1.2x and unchanged: how often the shipped cell's printed lower bound lies above
  1.2 (the winner's curse; at most 5% is the goal);
- `one 1.3x`: one candidate truly 1.3x and unchanged, the others truly 1.0x: how often the 1.3x is shipped (power;
  at least 80% is the goal) and how often another;
- `margin` (accuracy runs): every candidate truly 1.3x and truly worse by the margin on one task (in turn): any
  shipped cell is a false recommendation.
The speed grid (launch SD 0-3% x CV 0.5/1.5/8% x K 1/5/10/23) takes the accuracy half as passed (its tests are on
other data); the accuracy lines run the whole decision at one speed regime (launch SD 2%, CV 1.5%).

    .venv/bin/python benchmarks/two_stage.py [--trials 1000] [--accuracy-trials 300] [--seed 1] [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

from benchmarks.gate_false_alarms import TaskSpec  # noqa: E402
from benchmarks.recommendation import cell_probabilities  # noqa: E402
from evalharness.analysis.confirm import (  # noqa: E402
    Explored, finalists, not_worse, speed_over_launches, try_level)
from evalharness.analysis.speed import FLOOR, Side, speedup  # noqa: E402
from evalharness.analysis.stats import holm, paired_evidence  # noqa: E402

ALPHA = 0.05
LAUNCH_SD = (0.0, 0.01, 0.02, 0.03)
CVS = (0.005, 0.015, 0.08)
CANDIDATES = (1, 5, 10, 23)
# sm120's tasks: exploration's documents, accuracy (the sm120 review's), gate.margin, confirm.task_documents (its own
# documents, past exploration's) and confirm.task_repeats (±0.02 for gsm8k, ±0.03 elsewhere, at the documents and
# repeats `evalharness plan` sizes by simulating the calibrated test, analysis/passpower.py)
# (tests/unit/analysis/test_plan_two_stage.py keeps them equal to the matrix's plan)
SM120_TASKS = (("gsm8k", 24, 0.95, 0.02, 300, 5), ("gpqa_diamond", 24, 0.80, 0.03, 120, 17),
               ("mmlu_pro", 28, 0.82, 0.03, 224, 9), ("ifeval", 24, 0.88, 0.03, 120, 13))
SM120_LAUNCHES, SM120_SPEED_REPEATS = 3, 4  # sm120's confirm.launches and confirm.speed_repeats


@dataclass(frozen=True)
class Design:
    explore_repeats: int = 3
    launches: int = 3
    speed_repeats: int = 4
    tries: int = 1
    reference_exploration: bool = False  # the reference's exploration launch joins confirmation's speed claim
    explore_reference_repeats: int = 1
    confirm_repeats: int = 0  # answers per document a side in confirmation (0: each task's own, sm120's)
    cell_noise: float = 1.0  # the finalist's repeat CV as a multiple of the reference's


@dataclass(frozen=True)
class Regime:
    launch_sd: float
    cv: float
    candidates: int


def _launch(rng: np.random.Generator, true_log: float, regime: Regime, repeats: int, noise: float = 1.0) -> list[float]:
    offset = true_log + rng.normal(0.0, regime.launch_sd)
    return list(np.exp(offset + rng.normal(0.0, regime.cv * noise, repeats)))


def launch_figure(rates: list[float]) -> float:
    return float(np.exp(np.mean(np.log(rates))))


def _speed_try(rng, regime: Regime, design: Design, true_log: float, ref_explore: list[float], level: float):
    cell = [_launch(rng, true_log, regime, design.speed_repeats, design.cell_noise) for _ in range(design.launches)]
    ref = [_launch(rng, 0.0, regime, design.speed_repeats) for _ in range(design.launches)]
    if design.reference_exploration:
        ref.append(ref_explore)
    return speed_over_launches(cell, ref, level=level)


def speed_run(rng: np.random.Generator, regime: Regime, design: Design, truths: np.ndarray,
              single_stage: bool = False) -> tuple[int | None, float | None]:
    """(the shipped candidate's index or None, its printed lower bound): the speed half alone (answers pass)."""
    ref_explore = _launch(rng, 0.0, regime, design.explore_repeats)
    explored = [_launch(rng, float(np.log(t)), regime, design.explore_repeats) for t in truths]
    if single_stage:  # today: the fastest candidate the speed rule calls faster, on its one launch
        verdicts = [speedup(Side(tuple(c)), Side(tuple(ref_explore)), level=ALPHA) for c in explored]
        faster = [(v.ratio, i, v.low) for i, v in enumerate(verdicts) if v.faster]
        if not faster:
            return None, None
        _, index, low = max(faster)
        return index, low
    ref_figure = launch_figure(ref_explore)
    ranked = finalists([Explored(str(i), launch_figure(c) / ref_figure) for i, c in enumerate(explored)],
                       design.tries)
    level = try_level(ALPHA, design.tries)
    for pick in ranked:
        index = int(pick.cell)
        speed = _speed_try(rng, regime, design, float(np.log(truths[index])), ref_explore, level)
        if speed.verdict.faster:
            return index, speed.verdict.low
    return None, None


def speed_grid(trials: int, seed: int, design: Design, quick: bool) -> None:
    print(f"\n## The speed half: launches as the unit ({design.launches} launches a side a try, {design.speed_repeats} "
          f"repeats each, exploration {design.explore_repeats} repeats, tries {design.tries}, the reference's "
          f"exploration launch {'in' if design.reference_exploration else 'out of'} the claim; {trials} runs a "
          "line)\n")
    print("| launch SD | CV | K | floor: shipped (two-stage) | floor: shipped (single stage) | all 1.2x: bound "
          "above truth | one 1.3x: shipped it | one 1.3x: shipped another |")
    print("|---|---|---|---|---|---|---|---|")
    worst = {"floor": 0.0, "bound": 0.0, "power": 1.0}
    for launch_sd in LAUNCH_SD[::3] if quick else LAUNCH_SD:
        for cv in CVS[1:2] if quick else CVS:
            for k in CANDIDATES[::3] if quick else CANDIDATES:
                regime = Regime(launch_sd, cv, k)
                rng = np.random.default_rng([seed, int(launch_sd * 1000), int(cv * 1000), k])
                floor_two = floor_one = above = hit = other = 0
                for _ in range(trials):
                    truths = np.full(k, 1 + FLOOR)
                    floor_two += speed_run(rng, regime, design, truths)[0] is not None
                    floor_one += speed_run(rng, regime, design, truths, single_stage=True)[0] is not None
                    index, low = speed_run(rng, regime, design, np.full(k, 1.2))
                    above += index is not None and low is not None and low > 1.2
                    truths = np.ones(k)
                    truths[rng.integers(k)] = 1.3
                    index, _ = speed_run(rng, regime, design, truths)
                    hit += index is not None and truths[index] == 1.3
                    other += index is not None and truths[index] != 1.3
                rates = [floor_two / trials, floor_one / trials, above / trials, hit / trials, other / trials]
                worst["floor"] = max(worst["floor"], rates[0])
                worst["bound"] = max(worst["bound"], rates[2])
                worst["power"] = min(worst["power"], rates[3])
                print(f"| {launch_sd:.0%} | {cv:.1%} | {k} | " + " | ".join(f"{100 * r:.1f}%" for r in rates) + " |")
    print(f"\nWorst over the grid: shipped at the floor {100 * worst['floor']:.1f}% (goal at most 5%), bound above the "
          f"truth {100 * worst['bound']:.1f}% (at most 5%), the 1.3x shipped {100 * worst['power']:.1f}% (at least "
          "80%)")


# ------------------------------------------------------------------------------------------------ the accuracy half

def _tasks(explore_reference: int) -> list[TaskSpec]:
    return [TaskSpec(name, docs=docs, accuracy=acc, consistency=0.5, cell_repeats=1,
                     reference_repeats=explore_reference) for name, docs, acc, *_ in SM120_TASKS]


MARGINS = [margin for *_, margin, _, _ in SM120_TASKS]
CONFIRM_DOCUMENTS = [documents for *_, documents, _ in SM120_TASKS]
CONFIRM_REPEATS = [repeats for *_, repeats in SM120_TASKS]


def _answers(rng: np.random.Generator, p: np.ndarray, repeats: int) -> np.ndarray:
    return rng.binomial(repeats, p) / repeats


def accuracy_run(rng: np.random.Generator, design: Design, regime: Regime, speed_truths: np.ndarray,
                 drops: np.ndarray) -> int | None:
    """The whole decision: exploration (speed and answers) rules out and ranks, confirmation decides. `drops`:
    (K, tasks) true drops. Returns the shipped candidate's index or None."""
    tasks = _tasks(design.explore_reference_repeats)
    probabilities = [t.draw_p(rng, 1)[0] for t in tasks]
    # exploration: Holm over every cell x task of the worse test (the drift's "worse")
    p_worse = []
    for k in range(len(speed_truths)):
        for j, task in enumerate(tasks):
            ref = _answers(rng, probabilities[j], task.reference_repeats)
            cell = _answers(rng, cell_probabilities(probabilities[j], task.accuracy, drops[k, j]), 1)
            p_worse.append(paired_evidence(ref, cell, calibrate=False).p_above(MARGINS[j]))
    adjusted = np.array(holm(p_worse)).reshape(len(speed_truths), len(tasks))
    ref_explore = _launch(rng, 0.0, regime, design.explore_repeats)
    ref_figure = launch_figure(ref_explore)
    explored = [Explored(str(k), launch_figure(_launch(rng, float(np.log(t)), regime, design.explore_repeats))
                         / ref_figure, "worse" if adjusted[k].min() < ALPHA else "")
                for k, t in enumerate(speed_truths)]
    level = try_level(ALPHA, design.tries)
    for pick in finalists(explored, design.tries):
        k = int(pick.cell)
        speed = _speed_try(rng, regime, design, float(np.log(speed_truths[k])), ref_explore, level)
        claims = []
        for j, task in enumerate(tasks):
            repeats = CONFIRM_REPEATS[j] if design.confirm_repeats == 0 else design.confirm_repeats
            held_out = TaskSpec(task.name, docs=CONFIRM_DOCUMENTS[j], accuracy=task.accuracy,
                                consistency=task.consistency).draw_p(rng, 1)[0]  # documents exploration did not use
            ref = _answers(rng, held_out, repeats)
            cell = _answers(rng, cell_probabilities(held_out, task.accuracy, drops[k, j]), repeats)
            claims.append(not_worse(task.name, paired_evidence(ref, cell), MARGINS[j], level))
        if speed.verdict.faster and all(c.not_worse for c in claims):
            return k
    return None


def accuracy_lines(trials: int, seed: int, design: Design, quick: bool) -> None:
    design = Design(**{**design.__dict__, "launches": SM120_LAUNCHES, "speed_repeats": SM120_SPEED_REPEATS})
    regime = Regime(0.02, 0.015, 0)
    print(f"\n## The whole decision with answers (launch SD 2%, CV 1.5%; exploration: each cell once, the reference "
          f"{design.explore_reference_repeats}x; confirmation {design.launches} launches a side, "
          f"{design.confirm_repeats or 'each task its own'} answers a document a side; "
          f"{trials} runs a line)\n")
    print("| K | margin: shipped a cell worse by the margin | one 1.3x unchanged: shipped it |")
    print("|---|---|---|")
    for k in CANDIDATES[::3] if quick else CANDIDATES:
        rng = np.random.default_rng([seed, 7, k])
        bad = hit = 0
        for run in range(trials):
            drops = np.zeros((k, len(SM120_TASKS)))
            for i in range(k):
                drops[i, (i + run) % len(SM120_TASKS)] = MARGINS[(i + run) % len(SM120_TASKS)]
            bad += accuracy_run(rng, design, regime, np.full(k, 1.3), drops) is not None
            truths = np.ones(k)
            truths[rng.integers(k)] = 1.3
            shipped = accuracy_run(rng, design, regime, truths, np.zeros((k, len(SM120_TASKS))))
            hit += shipped is not None and truths[shipped] == 1.3
        print(f"| {k} | {100 * bad / trials:.1f}% | {100 * hit / trials:.1f}% |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--accuracy-trials", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--launches", type=int, default=Design.launches)
    parser.add_argument("--tries", type=int, default=Design.tries)
    parser.add_argument("--confirm-repeats", type=int, default=Design.confirm_repeats)
    parser.add_argument("--speed-repeats", type=int, default=Design.speed_repeats)
    parser.add_argument("--cell-noise", type=float, default=Design.cell_noise)
    parser.add_argument("--reference-exploration", action="store_true")
    parser.add_argument("--skip-accuracy", action="store_true")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--quick", action="store_true", help="the grid's corners only")
    args = parser.parse_args()
    design = Design(launches=args.launches, tries=args.tries, confirm_repeats=args.confirm_repeats,
                    reference_exploration=args.reference_exploration, speed_repeats=args.speed_repeats,
                    cell_noise=args.cell_noise)
    start = time.time()
    if not args.skip_speed:
        speed_grid(args.trials, args.seed, design, args.quick)
    if not args.skip_accuracy:
        accuracy_lines(args.accuracy_trials, args.seed, design, args.quick)
    print(f"\n{time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
