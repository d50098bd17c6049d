"""One regime of benchmarks/sequential_design.py from its tasks to its done-when lines: the tasks sized by
repeats_for_task, the equal-power search and the fresh measurement of each mix (`measure`), the null, boundary and
near-the-margin scenarios (`run_regime`), and the replay of a recorded run's reference (`from_run`).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path
from typing import Sequence

import numpy as np

from benchmarks.sequential_designs import AT_FIXED, OFFSETS, Design, equal_power_designs
from benchmarks.sequential_model import SCREEN_DOCUMENTS, UNCHANGED, Mix, Task
from benchmarks.sequential_report import _note, _seed, report_boundary, report_mixed, report_near, report_null
from benchmarks.sequential_search import all_dropped, print_search, search_equal_power
from benchmarks.sequential_simulation import simulate
from benchmarks.sequential_verdicts import done_when
from evalharness.analysis import sizing
from evalharness.analysis.sequential import quality_levels

def parse_tasks(spec: str, consistency: float) -> list[tuple[str, int, float, float]]:
    out = []
    for part in spec.split(","):
        name, docs, acc, tok = part.split(":")
        out.append((name, int(docs), float(acc), float(tok)))
    return out


def sized_tasks(sizes, *, consistency: float, margin: float, alpha: float, cells: int,
                p: dict[str, np.ndarray] | None = None, cell_repeats: int | None = None) -> list[Task]:
    """Each task's repeats from repeats_for_task; `cell_repeats` fixes the cells' (a matrix's `repeats`, the demo's
    1), the reference keeping its sized ones."""
    tasks = []
    for name, docs, acc, tok in sizes:
        rho = consistency if not isinstance(consistency, dict) else consistency[name]
        reps = sizing.repeats_for_task(acc, rho, docs, margin, alpha=alpha, cells=cells, tasks=len(sizes))
        if reps is None:
            print(f"  {name}: repeats_for_task finds no repeats (the documents' own spread of the drop is the "
                  "floor); left out")
            continue
        tasks.append(Task(name, docs, acc, rho, tok, cell_repeats or reps[0], reps[1], None if p is None else p[name]))
    return tasks


def print_tasks(tasks: Sequence[Task], cells: int, alpha: float) -> None:
    family = cells * len(tasks)
    for t in tasks:
        levels = quality_levels(alpha, t.looks, family, t.equivalence_only)
        print(f"  {t.name}: {t.docs} docs at {t.accuracy:.3f}, consistency {t.consistency:.2f}, {t.tokens:,.0f} "
              f"tokens per answer (assumed); repeats_for_task (cell, reference) ({t.cell_repeats}, "
              f"{t.reference_repeats}); looks {t.looks} (equivalence only {t.equivalence_only}), levels worse "
              "(x family) "
              + ", ".join(f"{v.worse:.2g}" for v in levels) + "; equivalent "
              + ", ".join(f"{v.equivalent:.2g}" for v in levels))


def measure(tasks: Sequence[Task], mix: Mix, *, what: str, label: str, seed: int, trials: int, search_trials: int,
            check: int, offsets: Sequence[int] = OFFSETS, **kw) -> tuple[dict, list[Design]]:
    """The equal-power search on its own draws, then every design measured on fresh ones (so the power reached is
    not the search's luck). Returns report_mixed's figures and the designs."""
    start = time.perf_counter()
    # the search decides equivalence by the t (calibrate=False; the calibrated test over 45 candidate designs would
    # take hours): the worse test is the t either way, and the equivalence power it matches is the t's, which the
    # calibrated test tracks (it is more conservative in every design alike); the designs are then measured as
    # configured (`calibrate`) on fresh draws, near the margin too, which says whether the power holds
    chosen, seen = search_equal_power(tasks, mix, offsets=offsets, trials=search_trials,
                                      seed=_seed(seed, f"{label}/{what}/search"), check=min(check, 1),
                                      **{**kw, "calibrate": False})
    if seen:
        _note(seen["result"], f"{label} {what} search")
    print_search(seen, tasks, search_trials, time.perf_counter() - start)
    if seen:
        print(f"  (the search's runs checked against the package, every candidate design: {seen['result'].agreed} of "
              f"{seen['result'].checked} runs decided alike)")
    designs = equal_power_designs(chosen)
    start = time.perf_counter()
    res = simulate(tasks, mix, designs=designs, trials=trials, seed=_seed(seed, f"{label}/{what}/mixed"), check=check,
                   **kw)
    _note(res, f"{label} {what}")
    print(f"\n  -- {what}: {trials} fresh simulated runs, every design on the same draws "
          f"({time.perf_counter() - start:.0f} s)")
    figures = report_mixed(res, label=what)
    print(f"  (checked against the package's decide_look / final_levels / decide_family, every design: {res.agreed} "
          f"of {res.checked} runs decided alike)")
    return figures, designs


def run_regime(tasks: list[Task], mixes: Sequence[tuple[str, Mix]], *, margin: float, alpha: float, drop: float,
               broken_factor: float, trials: int, null_trials: int, seed: int, check: int, label: str,
               token_goal: float, points: float, boundary_trials: int = 0, near_trials: int = 0,
               screen_documents: float = SCREEN_DOCUMENTS, search_trials: int = 2000,
               offsets: Sequence[int] = OFFSETS, calibrate: bool = False) -> bool:
    """mixes: (what, Mix), the first the headline (the null and boundary scenarios use its cells' fast / slow split
    and its designs, plus any other mix's designs whose repeats differ)."""
    kw = dict(margin=margin, alpha=alpha, drop=drop, broken_factor=broken_factor, screen_documents=screen_documents,
              calibrate=calibrate)
    print("\n  equivalence (a look's stop and the verdict) decided by " + (
        "the package's calibrated test (PairedEvidence.equivalent, analysis/nullboot.py), as the package decides it"
        if calibrate else "the t (and the score test), not the package's calibrated test: --calibrated for that"))
    first = mixes[0][1]
    print(f"\n  a broken cell answers with p_i x {broken_factor}; a dropped cell with p_i (1 - {drop:.3g} / accuracy) "
          f"(a true drop of {drop:.3g}) on every task; a slow cell is screened where the design screens "
          f"(screened(verdict, full_quality=False)): one repeat, which for a task it runs once is "
          f"{screen_documents:.0%} of the documents (quality.screen_documents); family {first.cells} x {len(tasks)} "
          f"= {first.cells * len(tasks)}")
    measured, headline = [], []
    for i, (what, mix) in enumerate(mixes):
        print(f"\n  == {what}: {mix.describe()}")
        figures, designs = measure(tasks, mix, what=what, label=label, seed=seed, trials=trials,
                                   search_trials=search_trials, check=check, offsets=offsets, **kw)
        measured.append(figures)
        if i == 0:
            headline = list(designs)
        else:
            for d in designs:
                same = next((h for h in headline if h.name == d.name), None)
                if same is not None and same.repeats != d.repeats:
                    headline.append(replace(d, name=f"{d.name} [{what}]"))
    null = boundary = None
    if null_trials:
        null_mix = Mix(tuple(UNCHANGED for _ in first.kinds), first.fast)
        start = time.perf_counter()
        nres = simulate(tasks, null_mix, designs=headline, trials=null_trials, seed=_seed(seed, f"{label}/null"),
                        check=check, **kw)
        _note(nres, f"{label} null")
        print(f"\n  -- null only: every one of {first.cells} cells unchanged (the same fast / slow split), "
              f"{null_trials} simulated runs ({time.perf_counter() - start:.0f} s)")
        null = report_null(nres)
        print(f"  (checked against the package: {nres.agreed} of {nres.checked} runs decided alike)")
    if boundary_trials:
        edge = all_dropped(first)
        start = time.perf_counter()
        bres = simulate(tasks, edge, designs=headline, trials=boundary_trials, seed=_seed(seed, f"{label}/boundary"),
                        check=min(check, 2), **{**kw, "drop": margin})
        _note(bres, f"{label} boundary")
        print(f"\n  -- the least favourable null: every one of {first.cells} cells truly worse by exactly the margin "
              f"({margin:.3g}) on every task (a 'worse' call is an error here), {boundary_trials} simulated runs "
              f"({time.perf_counter() - start:.0f} s)")
        boundary = report_boundary(bres)
        print(f"  (checked against the package: {bres.agreed} of {bres.checked} runs decided alike)")
    near = None
    if near_trials:
        edge = all_dropped(first)
        start = time.perf_counter()
        # equivalence power: the designs compared at equal power and the look at the same repeats (the calibrated
        # test is slow, and the cell stop rows differ only where a task is worse)
        near_designs = [d for d in headline if not d.cell_stop and not d.name.startswith(AT_FIXED)]
        nres = simulate(tasks, edge, designs=near_designs, trials=near_trials, seed=_seed(seed, f"{label}/near"),
                        check=min(check, 2), **{**kw, "drop": margin / 2})
        _note(nres, f"{label} near")
        print(f"\n  -- near the margin: every one of {first.cells} cells truly worse by half the margin "
              f"({margin / 2:.3g}) on every task (an 'equivalent' call is right here), {near_trials} simulated runs "
              f"({time.perf_counter() - start:.0f} s)")
        near = report_near(nres)
        print(f"  (checked against the package: {nres.agreed} of {nres.checked} runs decided alike)")
    print(f"\n  Done-when ({label}):")
    lines = done_when(measured, null, boundary, token_goal, points, near)
    print("\n".join(lines))
    return all("[NOT MET]" not in line for line in lines)


def from_run(args: argparse.Namespace) -> None:
    from evalharness.analysis.equivalence import margin_for
    from evalharness.analysis.pairing import side_scores
    from evalharness.records.io import load_run

    run_dir = Path(args.from_run)
    run = load_run(run_dir)
    reference = run.cells[run.reference]
    gate = run.meta.matrix.get("gate") or {}
    sizes, probs, rhos, margins, lines = [], {}, {}, set(), []
    for score in reference.quality:
        side = side_scores(run_dir, score)
        p = np.array(list(side.means.values()), dtype=float)
        if len(p) < 2:
            continue
        mu = float(p.mean())
        # the consistency (intra-class correlation) of the recorded repeats, by moments; greedy: 1
        r = side.repeats
        within = float(np.mean(p * (1 - p))) * r / (r - 1) if r > 1 else 0.0
        between = max(0.0, float(np.var(p)) - within / max(1, r))
        rho = 1.0 if mu in (0.0, 1.0) else float(np.clip(between / (mu * (1 - mu)), 0.01, 1.0))
        sizes.append((score.task, len(p), mu, args.from_run_tokens))
        probs[score.task], rhos[score.task] = p, rho
        margins.add(margin_for(score.task, gate))
        lines.append(f"  {score.task}: {len(p)} documents, {r} reference repeats, accuracy {mu:.3f}, documents "
                     f"whose repeats disagree {int(np.sum((p > 0) & (p < 1)))}, consistency {rho:.2f}")
    if not sizes:
        print(f"\n=== from run {run_dir}: no task to replay")
        return
    margin = max(margins)
    alpha = float(gate.get("alpha") or args.alpha)
    several = f" (the largest of {sorted(margins)})" if len(margins) > 1 else ""
    print(f"\n=== replay of {run_dir}: the reference {run.reference}'s per-document means are the p_i (fixed over "
          f"runs); the run's margin {margin}{several}, alpha {alpha}; {args.cells} cells (--cells), "
          f"{args.from_run_tokens:,.0f} tokens per answer on every task (assumed; the ratio does not depend on it)")
    print("\n".join(lines))
    tasks = sized_tasks(sizes, consistency=rhos, margin=margin, alpha=alpha, cells=args.cells, p=probs,
                        cell_repeats=args.cell_repeats)
    print_tasks(tasks, args.cells, alpha)
    run_regime(tasks, mixes_of(args), margin=margin, alpha=alpha, drop=args.drop_multiple * margin,
               broken_factor=args.broken_factor, trials=args.from_run_trials, null_trials=args.from_run_trials,
               seed=args.seed, check=args.check, label="from run", token_goal=args.token_goal, points=args.points,
               boundary_trials=args.from_run_trials, screen_documents=args.screen_documents,
               search_trials=args.from_run_trials)


def mixes_of(args: argparse.Namespace) -> list[tuple[str, Mix]]:
    """The stated mix, and the same without broken cells (unless there are none, or --no-without-broken)."""
    out = [("the stated mix", Mix.of(args.cells, args.broken_share, args.dropped_share, args.slow_share))]
    if args.broken_share > 0 and not args.no_without_broken:
        out.append(("without broken cells", Mix.of(args.cells, 0.0, args.dropped_share, args.slow_share)))
    return out
