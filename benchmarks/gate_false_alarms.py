"""How often does the gate fail a cell that did not change, and what drop does it catch? Measured, not assumed.

The gate's accuracy rule (analysis/gate.py, accuracy_reasons) is run many times on simulated runs built from one
baseline cell's own per-sample results (default: the demo's reference in baselines/cpu-smollm2.json), per task, at the
baseline's sample sizes and thresholds:

1. False alarms: each simulated run redraws a share `f` of the documents' outcomes from the task's own results
   (a bootstrap draw: same accuracy in expectation, answers no longer tied to documents). f = 1 is a pure resample,
   the noisiest null (every answer may flip); smaller f is an engine that changes a few answers at random (the demo's
   bf16 cell changed 5 of 232). The share of runs that fail is printed next to the stated alpha, per task and per
   cell (a cell fails when any of its tasks does: four tasks are four chances).
2. Detectable drop: the same runs, then each right answer turned wrong with probability d / accuracy (an expected
   drop of d); the smallest d on a 0.01 grid that fails at least 80% of runs, per task and per cell (all tasks
   dropping together), with f = 0 (a deterministic engine: only the drop flips answers) and with the noise above.

    .venv/bin/python benchmarks/gate_false_alarms.py [--baseline baselines/cpu-smollm2.json] [--trials 2000]
"""

from __future__ import annotations

import argparse
import functools
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from evalharness.analysis import gate  # noqa: E402
from evalharness.analysis.stats import mcnemar_exact  # noqa: E402
from evalharness.records.baseline import Thresholds, load_baseline  # noqa: E402

gate.mcnemar_exact = functools.lru_cache(maxsize=None)(mcnemar_exact)  # same values, computed once per table


def simulate(before: list[float], rng: random.Random, redraw: float, drop: float) -> list[float]:
    """One simulated run of a task: a share `redraw` of outcomes redrawn from the task's own results, then each right
    answer turned wrong with probability drop / accuracy."""
    accuracy = sum(before) / len(before)
    lose = drop / accuracy if accuracy > 0 else 0.0
    out = []
    for value in before:
        if redraw and rng.random() < redraw:
            value = before[rng.randrange(len(before))]
        if value and lose and rng.random() < lose:
            value = 0.0
        out.append(value)
    return out


def fails(before: list[float], after: list[float], limits: Thresholds) -> bool:
    n = len(before)
    lost = sum(1 for b, a in zip(before, after) if b and not a)
    gained = sum(1 for b, a in zip(before, after) if a and not b)
    return bool(gate.accuracy_reasons(sum(before) / n, sum(after) / n, lost, gained, limits))


def rates(tasks: dict[str, list[float]], limits: Thresholds, trials: int, redraw: float, drop: float,
          seed: int) -> tuple[dict[str, float], float]:
    """(share of runs failing per task, share of runs where the cell fails: any task)."""
    rng = random.Random(seed)
    per_task = dict.fromkeys(tasks, 0)
    cell = 0
    for _ in range(trials):
        failed = False
        for name, before in tasks.items():
            if fails(before, simulate(before, rng, redraw, drop), limits):
                per_task[name] += 1
                failed = True
        cell += failed
    return {k: v / trials for k, v in per_task.items()}, cell / trials


def smallest_caught(tasks: dict[str, list[float]], limits: Thresholds, trials: int, redraw: float,
                    power: float = 0.8) -> tuple[dict[str, float | None], float | None]:
    """The smallest expected drop (0.01 grid, up to 0.5) failing at least `power` of runs, per task and per cell
    (a task cannot drop by more than its accuracy: it leaves the cell's runs beyond that)."""
    per_task: dict[str, float | None] = dict.fromkeys(tasks)
    cell: float | None = None
    for step in range(1, 51):
        d = step / 100
        possible = {k: v for k, v in tasks.items() if sum(v) / len(v) >= d}
        if not possible:
            break
        task_rates, cell_rate = rates(possible, limits, trials, redraw, d, seed=step)
        for name, rate in task_rates.items():
            if per_task[name] is None and rate >= power:
                per_task[name] = d
        if cell is None and cell_rate >= power:
            cell = d
        if cell is not None and all(per_task[k] is not None for k in possible):
            break
    return per_task, cell


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=str(HERE.parent / "baselines" / "cpu-smollm2.json"))
    parser.add_argument("--cell", default=None, help="default: the baseline's first cell")
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--power-trials", type=int, default=500)
    parser.add_argument("--redraw", type=lambda v: [float(x) for x in v.split(",")], default=[1.0, 0.25, 0.05])
    args = parser.parse_args()
    baseline = load_baseline(Path(args.baseline))
    cell_id = args.cell or next(iter(baseline.cells))
    limits = baseline.thresholds
    tasks = {name: [float(v) for _, v in sorted(task.correct.items())]
             for name, task in baseline.cells[cell_id].tasks.items()}
    sizes = ", ".join(f"{k} {len(v)} docs at {sum(v) / len(v):.3f}" for k, v in tasks.items())
    print(f"baseline {args.baseline}, cell {cell_id}: {sizes}")
    print(f"thresholds: max_accuracy_drop {limits.max_accuracy_drop} when McNemar p < alpha {limits.alpha}; "
          f"hard_accuracy_drop {limits.hard_accuracy_drop}; max_flips {limits.max_flips}\n")
    print(f"# false alarms: runs of an unchanged cell that fail ({args.trials} simulated runs each; stated alpha "
          f"{limits.alpha} per task)")
    for redraw in args.redraw:
        task_rates, cell_rate = rates(tasks, limits, args.trials, redraw, 0.0, seed=int(redraw * 1000))
        per = ", ".join(f"{k} {v:.2%}" for k, v in task_rates.items())
        print(f"redraw {redraw:.0%} of answers: cell fails {cell_rate:.2%}  (per task: {per})")
    bare = limits.model_copy(update={"max_accuracy_drop": 0.0})
    task_rates, cell_rate = rates(tasks, bare, args.trials, 1.0, 0.0, seed=7)
    per = ", ".join(f"{k} {v:.2%}" for k, v in task_rates.items())
    print(f"(the McNemar test alone, max_accuracy_drop 0, redraw 100%: cell fails {cell_rate:.2%}; per task: {per}: "
          f"the exact test is conservative, and requiring a drop above {limits.max_accuracy_drop} as well lowers it "
          "further)")
    print(f"\n# detectable drop: smallest expected accuracy drop failing >= 80% of runs ({args.power_trials} runs "
          "per step)")
    for redraw in [0.0, *args.redraw]:
        per_task, cell = smallest_caught(tasks, limits, args.power_trials, redraw)
        per = ", ".join(f"{k} {'-' if v is None else f'{v:.2f}'}" for k, v in per_task.items())
        print(f"noise: redraw {redraw:.0%}: cell (every task dropping) {'-' if cell is None else f'{cell:.2f}'}; "
              f"per task: {per}")


if __name__ == "__main__":
    main()
