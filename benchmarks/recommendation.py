"""The errors that ship a bad cell: false pass, false "equivalent" and false recommendation, at the margin.

Issue 37 (findings 1 and the "also"): each cell's equivalence is a valid test at alpha, but the recommendation takes
the first equivalent one among the faster candidates, so with K candidates each truly at the margin the chance that
one of them is called equivalent, and recommended, grows with K. This benchmark measures, on simulated runs:

1. **false recommendation**: K faster candidates (1, 5, 10), each truly worse by exactly the margin on one task
   (the least favourable truth for "equivalent"; the other tasks unchanged), one shared reference; how often a cell
   is recommended, by the rule the report uses (`analysis/recommend.py controlled_choice` over `equivalence_p`: Holm
   over the candidates' TOST p-values) and by the rule it replaced (the first candidate in speed order whose own
   verdict is "equivalent");
2. **power**: K candidates all unchanged: how often one is recommended, and how often the fastest one;
   a mixed run: the 3 fastest of 10 at the margin, the other 7 unchanged: how often a bad one is recommended and how
   often a good one;
3. **false pass and false "equivalent" per task** at a true drop equal to the margin (and false "equivalent" at a
   true gain equal to the margin), at accuracy 0.80 and 0.95: the gate's pass is the drop's one-sided 95% upper bound
   below the margin, "equivalent" the 90% interval inside (-margin, margin); both at most alpha for a valid test.

Model (benchmarks/gate_false_alarms.py's): per run, each document's p_i ~ Beta(mu, consistency); the reference's
score of a document Binomial(Rr, p_i) / Rr, each cell's Binomial(Rc, p_i') / Rc independently, with p_i' = p_i (1 -
d / mu) for a true drop d (every document loses the same share: the drop is d over the population) and, for a gain,
1 - (1 - p_i)(1 - g / (1 - mu)). Consistency 1.0 is greedy decoding (p_i in {0, 1}; single samples: Tango's score
test); 0.5 with repeats is the t-test over documents.

Regimes: `sm120` (the headline: the sm120 matrix's sizes: gsm8k 200 documents at 0.95, gpqa_diamond 198 at 0.80,
mmlu_pro 210 at 0.82, ifeval 200 at 0.88, margin 0.02, alpha 0.05, consistency 0.5, each task at the repeats
`sizing.repeats_for_task` plans for 24 cells x 4 tasks: gsm8k 15/44, gpqa 30/118, mmlu_pro 26/118, ifeval 22/93)
and `demo` (the demo's four shipped tasks at their reference accuracies, 60 documents each, greedy single samples,
margin 0.1). Every verdict is the package's: `paired_evidence`, `equivalence.p_equivalent`, `recommend.equivalence_p`
and `recommend.controlled_choice`. Runs are decided by a numpy replica of the first two whose pass-side p-values
on the t path are the package's calibrated test itself (`PairedEvidence.calibrated_p` on each comparison: the
bootstrap of t under the tilted null, the same resamples, about 2 ms a comparison, which is why the lines run fewer
runs than before the calibration: 2,000 a recommendation line, 500 with the four tasks, 16,000 a task line); the
first `--check` runs of every line are also decided by the package's own functions, and the script exits 1 if any
disagree.

    .venv/bin/python benchmarks/recommendation.py [--regime sm120|demo|all] [--trials 2000] [--four-task-trials 500]
        [--task-trials 16000] [--seed 1] [--check 20]
"""

from __future__ import annotations

import argparse
import sys
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

from benchmarks.gate_false_alarms import TaskSpec, holm_adjusted, task_tests  # noqa: E402
from evalharness.analysis import sizing  # noqa: E402
from evalharness.analysis.equivalence import p_equivalent  # noqa: E402
from evalharness.analysis.recommend import controlled_choice, equivalence_p  # noqa: E402
from evalharness.analysis.stats import paired_evidence  # noqa: E402
from evalharness.records.drift import CellDrift, TaskDrift  # noqa: E402

CHECK_FAILURES: list[str] = []


# ------------------------------------------------------------------------------------------------- the simulation

def cell_probabilities(p: np.ndarray, accuracy: float, change: float) -> np.ndarray:
    """The cell's per-document probabilities at a true change: positive, a drop (every p_i loses the share
    change / accuracy); negative, a gain (every 1 - p_i loses the share |change| / (1 - accuracy))."""
    if change >= 0:
        return np.clip(p * (1 - change / accuracy), 0.0, 1.0)
    return np.clip(1 - (1 - p) * (1 + change / (1 - accuracy)), 0.0, 1.0)


def draw(task: TaskSpec, rng: np.random.Generator, trials: int, changes: Sequence[float]) -> tuple[np.ndarray,
                                                                                                   np.ndarray]:
    """(reference (T, n), cells (T, C, n)) scores for one task: one shared reference, a cell per `changes` entry."""
    p = task.draw_p(rng, trials)
    ref = rng.binomial(task.reference_repeats, p) / task.reference_repeats
    cells = np.stack([rng.binomial(task.cell_repeats, cell_probabilities(p, task.accuracy, c)) / task.cell_repeats
                      for c in changes], axis=1)
    return ref, cells


def package_equivalence_p(refs: Sequence[np.ndarray], cells: Sequence[np.ndarray], names: Sequence[str],
                          margin: float, alpha: float) -> list[float]:
    """One run through the package: refs[k] (n,), cells[k] (C, n) -> each cell's `equivalence_p` over its tasks."""
    out = []
    for c in range(cells[0].shape[0]):
        tasks = [TaskDrift(task=name, p_equivalent=p_equivalent(paired_evidence(refs[k], cells[k][c]), margin, alpha),
                           level=alpha) for k, name in enumerate(names)]
        out.append(equivalence_p(CellDrift(cell=str(c), tasks=tasks), alpha))
    return out


@dataclass
class Choice:
    """Per trial: the index of the recommended candidate (-1: none) by the controlled rule and by the old one."""

    controlled: np.ndarray
    first_equivalent: np.ndarray
    checked: int = 0
    agreed: int = 0


def _holm_first(p: np.ndarray, alpha: float) -> np.ndarray:
    """Per row of (T, K) p-values in speed order: the first index whose Holm-adjusted p is below alpha (-1: none),
    as `controlled_choice` computes it."""
    kept = holm_adjusted(p) < alpha
    return np.where(kept.any(axis=-1), np.argmax(kept, axis=-1), -1)


def simulate_choice(tasks: Sequence[TaskSpec], changes: Sequence[Sequence[float]], *, margin: float, alpha: float,
                    trials: int, seed: Sequence[int], check: int, chunk: int = 500) -> Choice:
    """`trials` runs of len(changes) faster candidates in speed order; changes[c][k]: candidate c's true change on
    task k. Returns which candidate each rule recommends."""
    rng = np.random.default_rng(list(seed))
    names = [t.name for t in tasks]
    controlled, first = [], []
    checked = agreed = 0
    done = 0
    while done < trials:
        size = min(chunk, trials - done)
        refs, cells, p_task = [], [], []
        for k, task in enumerate(tasks):
            ref, cell = draw(task, rng, size, [c[k] for c in changes])
            refs.append(ref)
            cells.append(cell)
            p_task.append(task_tests(ref, cell, margin, calibrate=True, level=alpha).p_equivalent)
        p_cell = np.minimum(1.0, np.max(np.stack(p_task, axis=-1), axis=-1))  # (T, C): equivalence_p at level alpha
        chosen = _holm_first(p_cell, alpha)
        own = p_cell < alpha  # each cell's own verdict: equivalent on every task
        controlled.append(chosen)
        first.append(np.where(own.any(axis=-1), np.argmax(own, axis=-1), -1))
        for i in range(min(size, check - checked)):
            exact = package_equivalence_p([r[i] for r in refs], [c[i] for c in cells], names, margin, alpha)
            index, _ = controlled_choice(exact, alpha)
            checked += 1
            agreed += bool(np.allclose(exact, p_cell[i], rtol=1e-6, atol=1e-9)
                           and (-1 if index is None else index) == chosen[i])
        done += size
    return Choice(controlled=np.concatenate(controlled), first_equivalent=np.concatenate(first), checked=checked,
                  agreed=agreed)


def simulate_task(task: TaskSpec, change: float, *, margin: float, alpha: float, trials: int, seed: Sequence[int],
                  check: int) -> tuple[np.ndarray, np.ndarray, int, int]:
    """One comparison per run at a true `change`: (passed (T,), equivalent (T,)) as the gate decides one task alone
    (pass: the one-sided upper bound below the margin; equivalent: the 90% interval inside +-margin)."""
    rng = np.random.default_rng(list(seed))
    ref, cell = draw(task, rng, trials, [change])
    tests = task_tests(ref, cell, margin, calibrate=True, level=alpha)
    passed = tests.p_below_margin[:, 0] < alpha
    equivalent = tests.p_equivalent[:, 0] < alpha
    checked = agreed = 0
    for i in range(min(trials, check)):
        low, high = paired_evidence(ref[i], cell[i, 0]).equivalence_bounds(margin, alpha)
        checked += 1
        agreed += bool((high < margin) == passed[i] and (-margin < low and high < margin) == equivalent[i])
    return passed, equivalent, checked, agreed


# --------------------------------------------------------------------------------------------------------- report

def _seed(seed: int, label: str) -> list[int]:
    return [seed, zlib.crc32(label.encode())]


def _pct(hits: np.ndarray) -> str:
    rate = float(np.mean(hits))
    return f"{rate:.2%} +-{(rate * (1 - rate) / len(hits)) ** 0.5:.2%}"


def _note(label: str, checked: int, agreed: int) -> None:
    if checked and agreed != checked:
        CHECK_FAILURES.append(f"{label}: {checked - agreed} of {checked} runs decided differently by the package")


def sized(name: str, docs: int, accuracy: float, consistency: float, margin: float, alpha: float, cells: int,
          tasks: int) -> TaskSpec:
    repeats = sizing.repeats_for_task(accuracy, consistency, docs, margin, alpha=alpha, cells=cells, tasks=tasks) \
        if consistency < 1 else (1, 1)
    rc, rr = repeats or (1, 1)
    return TaskSpec(name, docs=docs, accuracy=accuracy, consistency=consistency, cell_repeats=rc, reference_repeats=rr)


SM120 = [("gsm8k", 200, 0.95), ("gpqa_diamond", 198, 0.80), ("mmlu_pro", 210, 0.82), ("ifeval", 200, 0.88)]
DEMO = [("eh_capitals", 60, 0.85), ("eh_arithmetic", 60, 0.72), ("eh_choice", 60, 0.90), ("eh_copy", 60, 0.98)]


def recommendation_lines(label: str, tasks: list[TaskSpec], *, margin: float, alpha: float, trials: int, seed: int,
                         check: int, counts: Sequence[int]) -> dict:
    """The false-recommendation, power and mixed lines for one regime; returns the headline rates."""
    figures: dict = {}
    print(f"\n{label}: tasks " + ", ".join(f"{t.name} {t.docs} docs at {t.accuracy} ({t.cell_repeats}/"
                                            f"{t.reference_repeats})" for t in tasks) + f"; margin {margin}")
    print("| candidates | each at the margin on one task: recommended (controlled) | (the rule it replaced) | "
          "all unchanged: one recommended (controlled) | the fastest (controlled) | (replaced rule: one) |")
    print("|---|---|---|---|---|---|")
    at_margin = [margin] + [0.0] * (len(tasks) - 1)  # worse by the margin on the first task, the others unchanged
    for k in counts:
        bad = simulate_choice(tasks, [at_margin] * k, margin=margin, alpha=alpha, trials=trials,
                              seed=_seed(seed, f"{label} bad {k}"), check=check)
        good = simulate_choice(tasks, [[0.0] * len(tasks)] * k, margin=margin, alpha=alpha, trials=trials,
                               seed=_seed(seed, f"{label} good {k}"), check=check)
        _note(f"{label} bad {k}", bad.checked, bad.agreed)
        _note(f"{label} good {k}", good.checked, good.agreed)
        figures[k] = dict(false=float(np.mean(bad.controlled >= 0)), old=float(np.mean(bad.first_equivalent >= 0)),
                          power=float(np.mean(good.controlled >= 0)))
        print(f"| {k} | **{_pct(bad.controlled >= 0)}** | {_pct(bad.first_equivalent >= 0)} | "
              f"{_pct(good.controlled >= 0)} | {_pct(good.controlled == 0)} | {_pct(good.first_equivalent >= 0)} |")
    if max(counts) >= 10:
        mixed = simulate_choice(tasks, [at_margin] * 3 + [[0.0] * len(tasks)] * 7, margin=margin, alpha=alpha,
                                trials=trials, seed=_seed(seed, f"{label} mixed"), check=check)
        _note(f"{label} mixed", mixed.checked, mixed.agreed)
        bad_pick, good_pick = (mixed.controlled >= 0) & (mixed.controlled < 3), mixed.controlled >= 3
        old_bad = (mixed.first_equivalent >= 0) & (mixed.first_equivalent < 3)
        figures["mixed"] = dict(bad=float(np.mean(bad_pick)), old_bad=float(np.mean(old_bad)))
        print(f"\n10 candidates, the 3 fastest at the margin, 7 unchanged: a bad one recommended {_pct(bad_pick)} "
              f"(the replaced rule {_pct(old_bad)}); a good one {_pct(good_pick)} (the replaced rule "
              f"{_pct(mixed.first_equivalent >= 3)}); none {_pct(mixed.controlled < 0)}")
    return figures


def task_lines(label: str, tasks: list[TaskSpec], *, margin: float, alpha: float, trials: int, seed: int,
               check: int) -> list[float]:
    """False pass and false "equivalent" per task at a true drop of the margin, false "equivalent" at a true gain of
    the margin, and the equivalence power at no change. Returns every false rate (for the verdict)."""
    rates = []
    print(f"\n{label}, per task (one comparison, alpha {alpha}, margin {margin}):")
    print("| task | accuracy | repeats (cell/ref) | drop = margin: false pass | false equivalent | gain = margin: "
          "false equivalent | no change: equivalent |")
    print("|---|---|---|---|---|---|---|")
    for task in tasks:
        rows = {}
        for name, change in (("drop", margin), ("gain", -margin), ("none", 0.0)):
            passed, equivalent, checked, agreed = simulate_task(
                task, change, margin=margin, alpha=alpha, trials=trials,
                seed=_seed(seed, f"{label} {task.name} {name}"), check=check)
            _note(f"{label} {task.name} {name}", checked, agreed)
            rows[name] = (passed, equivalent)
        rates += [float(np.mean(rows["drop"][0])), float(np.mean(rows["drop"][1])), float(np.mean(rows["gain"][1]))]
        print(f"| {task.name} | {task.accuracy} | {task.cell_repeats}/{task.reference_repeats} | "
              f"{_pct(rows['drop'][0])} | {_pct(rows['drop'][1])} | {_pct(rows['gain'][1])} | "
              f"{_pct(rows['none'][1])} |")
    return rates


def _verdict(ok: bool, what: str) -> str:
    return f"  [{'met' if ok else 'NOT MET'}] {what}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--regime", choices=["sm120", "demo", "all"], default="all")
    parser.add_argument("--trials", type=int, default=2000, help="runs per recommendation line")
    parser.add_argument("--four-task-trials", type=int, default=500,
                        help="runs per line with the four sm120 tasks (each comparison resampled: about 4x gsm8k's)")
    parser.add_argument("--task-trials", type=int, default=16000, help="runs per task line (false pass, equivalent)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--check", type=int, default=20, help="runs per line also decided by the package's functions")
    args = parser.parse_args(argv)
    if args.trials < 1 or args.task_trials < 1 or args.four_task_trials < 1 or args.check < 0:
        parser.error("--trials, --task-trials and --four-task-trials must be at least 1 and --check at least 0")
    start = time.perf_counter()
    verdicts = []
    alpha = 0.05
    if args.regime in ("sm120", "all"):
        margin = 0.02
        tasks = [sized(n, d, a, 0.5, margin, alpha, 24, 4) for n, d, a in SM120]
        gsm8k = tasks[:1]
        figures = recommendation_lines("sm120, gsm8k alone (the finding's regime)", gsm8k, margin=margin,
                                       alpha=alpha, trials=args.trials, seed=args.seed, check=args.check,
                                       counts=(1, 5, 10))
        recommendation_lines("sm120, four tasks, the candidates at the margin on gsm8k", tasks, margin=margin,
                             alpha=alpha, trials=args.four_task_trials, seed=args.seed, check=args.check,
                             counts=(1, 5, 10))
        verdicts.append(_verdict(figures[10]["false"] <= alpha + 2 * (alpha * (1 - alpha) / args.trials) ** 0.5,
                                 f"false recommendation with 10 candidates at the margin at most 5% (+ two standard "
                                 f"errors): {figures[10]['false']:.2%} (the replaced rule {figures[10]['old']:.2%})"))
        per_task = [sized(n, d, a, c, margin, alpha, 24, 4) for n, d, a in SM120[:2] for c in (0.5, 0.75, 1.0)]
        rates = task_lines("sm120 (accuracy 0.95: gsm8k, 0.80: gpqa_diamond; consistency 0.5 and 0.75 at the "
                           "planned repeats, and 1.0: greedy single samples)", per_task, margin=margin, alpha=alpha,
                           trials=args.task_trials, seed=args.seed, check=args.check)
        noise = 2 * (alpha * (1 - alpha) / args.task_trials) ** 0.5
        ships = [r for i, r in enumerate(rates) if i % 3 != 2]  # the drop's side: a bad cell passed or "equivalent"
        verdicts.append(_verdict(max(ships) <= alpha + noise, f"false pass and false 'equivalent' at a true drop of "
                                 f"the margin at most 5% (+ two standard errors) at accuracy 0.80 and 0.95: highest "
                                 f"{max(ships):.2%}"))
        verdicts.append(_verdict(max(rates) <= alpha + noise, f"... and false 'equivalent' at a true gain of the "
                                 f"margin (a better cell; TOST's other side): highest {max(rates):.2%}"))
    if args.regime in ("demo", "all"):
        margin = 0.1
        tasks = [TaskSpec(n, docs=d, accuracy=a, consistency=1.0) for n, d, a in DEMO]
        recommendation_lines("demo (greedy single samples)", tasks, margin=margin, alpha=alpha, trials=args.trials,
                             seed=args.seed, check=args.check, counts=(1, 3))
        task_lines("demo", tasks[:2], margin=margin, alpha=alpha, trials=args.task_trials, seed=args.seed,
                   check=args.check)
    print(f"\nwall {time.perf_counter() - start:.0f} s")
    print("\n".join(verdicts))
    if CHECK_FAILURES:
        print("the replica disagreed with the package:\n  " + "\n  ".join(CHECK_FAILURES))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
