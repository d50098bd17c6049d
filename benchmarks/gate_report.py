"""The regimes benchmarks/gate_false_alarms.py reports: the sm120 matrix, the demo, an empirical A/A from a run
folder, and the timing of the package's decision code; each design's null, boundary and power lines with their
standard errors and done-when verdicts. Also the list of runs the package decided differently (`CHECK_FAILURES`).
"""

from __future__ import annotations

import argparse
import time
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Sequence

import numpy as np

from benchmarks.gate_replica import FAIL, INCONCLUSIVE, PASS, decide_exact
from benchmarks.gate_simulation import RunResult, TaskSpec, planned_repeats, simulate_run
from evalharness.analysis import sizing
from evalharness.analysis.stats import holm, paired_evidence

CHECK_FAILURES: list[str] = []


def _se(rate: float, trials: int) -> float:
    return (rate * (1 - rate) / trials) ** 0.5


def _pct(rate: float, trials: int) -> str:
    return f"{rate:6.2%} +-{_se(rate, trials):.2%}"


def _seed(seed: int, label: str) -> list[int]:
    return [seed, zlib.crc32(label.encode())]


def _note_check(result: RunResult, label: str) -> None:
    if result.checked and result.agreed != result.checked:
        CHECK_FAILURES.append(f"{label}: {result.checked - result.agreed} of {result.checked} runs decided "
                              "differently by the package's functions")


def _verdict(ok: bool, what: str) -> str:
    return f"  [{'met' if ok else 'NOT MET'}] {what}"


def _power_verdict(what: str, rate: float, goal: float, trials: int) -> str:
    """met, within noise (less than two binomial standard errors short of the goal), or NOT MET."""
    se = _se(goal, trials)
    state = "met" if rate >= goal else "within noise" if rate >= goal - 2 * se else "NOT MET"
    return f"  [{state}] {what} >= {goal:.0%} of runs against a drop of 2 x margin: {rate:.1%} (+-{se:.1%})"


def report_design(label: str, tasks: list[TaskSpec], *, cells: int, margin: float, alpha: float, trials: int,
                  seed: int, check: int, cell_counts: Sequence[int], power_goal: float = 0.8) -> dict:
    """Null runs at each cell count, then runs with cell 0 dropping by 2 and 1 margins among `cells` cells."""
    print(f"\n  -- {label}")
    figures: dict = {"null": {}}
    checked = agreed = 0
    for count in cell_counts:
        res = simulate_run(tasks, cells=count, margin=margin, alpha=alpha, trials=trials,
                           seed=_seed(seed, f"{label}/null/{count}"), check=check)
        _note_check(res, f"{label} null {count} cells")
        checked, agreed = checked + res.checked, agreed + res.agreed
        figures["null"][count] = res.run_false_fail()
        print(f"  nothing changed, {count:2d} cells: run fails {_pct(res.run_false_fail(), trials)}; per cell: "
              f"fail {res.cell_false_fail():.2%}, pass {res.share(PASS):.2%}, "
              f"inconclusive {res.share(INCONCLUSIVE):.2%}")
    count = max(cell_counts)
    res = simulate_run(tasks, cells=count, margin=margin, alpha=alpha, trials=trials, check=min(check, 3),
                       seed=_seed(seed, f"{label}/boundary/{count}"), drops={c: margin for c in range(count)})
    _note_check(res, f"{label} boundary {count} cells")
    checked, agreed = checked + res.checked, agreed + res.agreed
    boundary = float(np.mean(np.any(res.outcome == FAIL, axis=1)))
    figures["boundary"] = boundary
    print(f"  every one of {count} cells truly {margin:.3g} worse on every task (exactly the margin: the least "
          f"favourable null): run fails {_pct(boundary, trials)}")
    for multiple in (2, 1):
        d = multiple * margin
        res = simulate_run(tasks, cells=cells, margin=margin, alpha=alpha, trials=trials, drops={0: d},
                           seed=_seed(seed, f"{label}/drop/{multiple}"), check=check)
        _note_check(res, f"{label} drop {multiple}m")
        checked, agreed = checked + res.checked, agreed + res.agreed
        per = ", ".join(f"{t.name} {v:.1%}" for t, v in zip(tasks, res.caught_per_task(0)))
        figures[f"power_{multiple}m"] = res.caught(0)
        figures[f"power_{multiple}m_tasks"] = res.caught_per_task(0)
        print(f"  one cell of {cells} drops {d:.3g} ({multiple} x margin) on every task: it fails "
              f"{_pct(res.caught(0), trials)} of runs; each task called worse: {per}; "
              f"the {cells - 1} unchanged cells fail {res.cell_false_fail():.2%} each")
    print(f"  (checked against the package's decide_family: {agreed} of {checked} runs decided alike)")
    return figures


def sm120(args: argparse.Namespace) -> None:
    cells, margin, alpha, power = 24, 0.02, 0.05, 0.8
    sizes = [("gsm8k", 200, 0.95), ("gpqa_diamond", 198, 0.80), ("mmlu_pro", 210, 0.82), ("ifeval", 200, 0.88)]
    print(f"\n=== regime sm120: {cells} cells against one shared reference; "
          + ", ".join(f"{n} {d} docs at {a}" for n, d, a in sizes)
          + f" (binary; ifeval prompt-level); margin {margin}, alpha {alpha}; family {cells} x {len(sizes)} = "
          f"{cells * len(sizes)} worse-tests (Holm); {args.trials} simulated runs per line (+- one binomial "
          "standard error)")
    for rho in (0.5, 0.75):
        base = [TaskSpec(n, docs=d, accuracy=a, consistency=rho) for n, d, a in sizes]
        print(f"\n consistency {rho}")
        plain = {t.name: planned_repeats(t, margin=margin, alpha=alpha, power=power, cells=cells, tasks=len(base))
                 for t in base}
        honest = {t.name: planned_repeats(t, margin=margin, alpha=alpha, power=power, cells=cells,
                                          tasks=len(base), under_drop=True) for t in base}
        for t in base:
            w = sizing.within_doc_variance(t.accuracy, rho)
            rc, rr = plain[t.name]
            se1, se_planned = sizing.standard_error(w, t.docs, 1, 1), sizing.standard_error(w, t.docs, rc, rr)
            reach = sizing.reachable_margin(w, t.docs, 1, 1, alpha=alpha, power=power, cells=cells, tasks=len(base))
            print(f"  {t.name}: E[p(1-p)] {w:.4f}; single samples: se {se1:.4f}, certifiable margin {reach:.3f}; "
                  f"repeats_needed (cell, reference): {plain[t.name]}, se {se_planned:.4f}; "
                  f"repeats_for_task (the drop's variance, t): {honest[t.name]}")
        print("  repeats are per task (each task its own cell / reference repeats), not the max over tasks")
        single = report_design("single samples (Rc = Rr = 1)", base, cells=cells, margin=margin, alpha=alpha,
                               trials=args.trials, seed=args.seed, check=args.check, cell_counts=(1, 4, 24))
        planned_tasks = [replace(t, cell_repeats=plain[t.name][0], reference_repeats=plain[t.name][1]) for t in base]
        planned = report_design("planned repeats (repeats_needed, the null's variance)", planned_tasks, cells=cells,
                                margin=margin, alpha=alpha, trials=args.trials, seed=args.seed, check=args.check,
                                cell_counts=(1, 4, 24))
        honest_tasks = [replace(t, cell_repeats=honest[t.name][0], reference_repeats=honest[t.name][1])
                        for t in base]
        sized = report_design("repeats_for_task (sized at the drop's variance, t quantile)", honest_tasks,
                              cells=cells, margin=margin, alpha=alpha, trials=args.trials, seed=args.seed,
                              check=args.check, cell_counts=(24,))
        print(f"\n  Done-when, consistency {rho}:")
        print(_verdict(single["null"][24] <= alpha, f"24-cell run with single samples fails <= 5%: "
                                                     f"{single['null'][24]:.2%}"))
        worst = max(max(planned["null"].values()), max(single["null"].values()))
        print(_verdict(worst <= alpha, "unchanged CI run fails <= 5% at 1, 4, 24 cells: "
                       + ", ".join(f"{k}: {v:.2%}" for k, v in single["null"].items()) + " (single); "
                       + ", ".join(f"{k}: {v:.2%}" for k, v in planned["null"].items()) + " (planned)"))
        trials = args.trials
        print(_power_verdict("at repeats_needed's repeats, the dropped cell fails", planned["power_2m"], power, trials))
        print(_power_verdict("  ... each task of it called worse on its own (what the sizing promises), lowest",
                             min(planned["power_2m_tasks"]), power, trials))
        print(_power_verdict("at repeats_for_task's repeats, the dropped cell fails", sized["power_2m"], power,
                             trials))
        print(_power_verdict("  ... each task of it called worse on its own, lowest", min(sized["power_2m_tasks"]),
                             power, trials))


def demo(args: argparse.Namespace) -> None:
    from evalharness.records.baseline import load_baseline

    baseline = load_baseline(Path(args.baseline))
    cell_id = next(iter(baseline.cells))
    cells, margin, alpha, power = 3, 0.1, 0.05, 0.8
    sizes = []
    for name, task in baseline.cells[cell_id].tasks.items():
        values = list(task.correct.values())
        sizes.append((name, len(values), float(np.mean(values))))
    print(f"\n=== regime demo: {args.baseline} (cell {cell_id}): "
          + ", ".join(f"{n} {d} docs at {a:.3f}" for n, d, a in sizes)
          + f"; {cells} cells against one shared reference, margin {margin}, alpha {alpha}; family {cells} x "
          f"{len(sizes)} = {cells * len(sizes)}; {args.trials} simulated runs per line")
    for rho in (1.0, 0.5):
        base = [TaskSpec(n, docs=d, accuracy=a, consistency=rho) for n, d, a in sizes]
        print(f"\n consistency {rho}" + (" (greedy decoding: each document always right or always wrong)"
                                         if rho == 1 else ""))
        plain = {t.name: planned_repeats(t, margin=margin, alpha=alpha, power=power, cells=cells, tasks=len(base))
                 for t in base}
        honest = {t.name: planned_repeats(t, margin=margin, alpha=alpha, power=power, cells=cells,
                                          tasks=len(base), under_drop=True) for t in base}
        print("  repeats_needed per task (cell, reference): "
              + ", ".join(f"{n} {plain[n]}" for n in plain) + "; repeats_for_task (the drop's variance, t): "
              + ", ".join(f"{n} {honest[n]}" for n in honest))
        report_design("single samples (Rc = Rr = 1)", base, cells=cells, margin=margin, alpha=alpha,
                      trials=args.trials, seed=args.seed, check=args.check, cell_counts=(1, 3))
        if any(v != (1, 1) for v in plain.values()):
            report_design("planned repeats (the null's variance)",
                          [replace(t, cell_repeats=plain[t.name][0], reference_repeats=plain[t.name][1])
                           for t in base], cells=cells, margin=margin, alpha=alpha, trials=args.trials,
                          seed=args.seed, check=args.check, cell_counts=(3,))
        if all(v is not None for v in honest.values()):
            report_design("repeats_for_task (sized at the drop's variance, t quantile)",
                          [replace(t, cell_repeats=honest[t.name][0], reference_repeats=honest[t.name][1])
                           for t in base], cells=cells, margin=margin, alpha=alpha, trials=args.trials,
                          seed=args.seed, check=args.check, cell_counts=(3,))


def from_run(args: argparse.Namespace) -> None:
    """An empirical A/A: the per-document probabilities are a recorded run's reference, each document's mean over
    its repeats (the demo's reference runs every task twice), and the run's own margin and cell count."""
    from evalharness.analysis.equivalence import margin_for
    from evalharness.analysis.pairing import side_scores
    from evalharness.records.io import load_run

    run_dir = Path(args.from_run)
    run = load_run(run_dir)
    reference = run.cells[run.reference]
    gate = run.meta.matrix.get("gate") or {}
    cells = max(1, sum(1 for c in run.cells.values() if c.status == "ok") - 1)
    specs, lines = [], []
    for score in reference.quality:
        if score.finished_repeats() < 2:
            continue
        side = side_scores(run_dir, score)
        specs.append(TaskSpec(score.task, p=np.array(list(side.means.values()))))
        lines.append(f"  {score.task}: {len(side.means)} documents, {side.repeats} repeats, accuracy "
              f"{np.mean(list(side.means.values())):.3f}, documents whose repeats disagree: "
              f"{sum(0 < v < 1 for v in side.means.values())}")
    if not specs:
        print(f"\n=== from run {run_dir}: its reference has no task with two or more repeats; nothing to replay")
        return
    margins = {margin_for(t.name, gate) for t in specs}
    margin = max(margins)
    print(f"\n=== empirical A/A from {run_dir}: reference {run.reference}, {cells} other ready cell(s), margin "
          f"{margin}{' (the largest of ' + str(sorted(margins)) + ')' if len(margins) > 1 else ''}; every side a "
          "fresh draw from the reference's own per-document shares")
    print("\n".join(lines))
    report_design("single samples, the run's reference probabilities", specs, cells=cells, margin=margin,
                  alpha=float(gate.get("alpha") or 0.05), trials=args.trials, seed=args.seed, check=args.check,
                  cell_counts=(cells,))


def time_gate(seed: int) -> None:
    """The package's decision code on one 24-cell x 4-task run of 200 documents, single samples and 8 x 40 repeats."""
    print("\n=== timing: paired_evidence + decide_family + gate_outcome, one run of 24 cells x 4 tasks x 200 docs "
          "(the package's functions, median of 5)")
    for rc, rr in ((1, 1), (8, 40)):
        tasks = [TaskSpec(n, docs=200, accuracy=a, consistency=0.5, cell_repeats=rc, reference_repeats=rr)
                 for n, a in (("gsm8k", 0.95), ("gpqa_diamond", 0.8), ("mmlu_pro", 0.82), ("ifeval", 0.88))]
        rng = np.random.default_rng(seed)
        refs, cells = [], []
        for t in tasks:
            p = t.draw_p(rng, 1)[0]
            refs.append(rng.binomial(rr, p) / rr)
            cells.append(rng.binomial(rc, np.broadcast_to(p, (24, 200))) / rc)
        names = [t.name for t in tasks]
        times, holm_times = [], []
        raw = [paired_evidence(refs[k], cells[k][c]).p_above(0.02) for c in range(24) for k in range(len(tasks))]
        for _ in range(5):
            start = time.perf_counter()
            decide_exact(refs, cells, names, 0.02, 0.05)
            times.append(time.perf_counter() - start)
            start = time.perf_counter()
            holm(raw)
            holm_times.append(time.perf_counter() - start)
        print(f"  repeats {rc} / {rr}: {np.median(times):.3f} s (min {min(times):.3f}, max {max(times):.3f}); of it "
              f"stats.holm alone {np.median(holm_times):.3f} s (numpy; statsmodels' multipletests took 58 ms a call "
              f"here, its gc.collect())")
