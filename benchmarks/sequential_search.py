"""The equal-power search of benchmarks/sequential_design.py: each design's smallest maximum repeats per task at
which both tests have at least the fixed design's per-task power on the same draws, and its printout.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import numpy as np

from benchmarks.sequential_designs import BASES, FIXED, MIN_POWER, OFFSETS, Design, Result
from benchmarks.sequential_model import DROPPED, EQUIVALENT, Mix, Task
from benchmarks.sequential_report import per_task_power
from benchmarks.sequential_simulation import simulate

def per_task_equivalence(res: Result, name: str) -> np.ndarray:
    """(K,) each task of a fast cell called equivalent, by task (the equivalence power where every cell is truly a
    little worse than the reference: the near-the-margin scenario)."""
    fast = np.array(res.mix.fast)
    return np.mean(res.outcomes[name][:, fast, :] == EQUIVALENT, axis=(0, 1))


def all_dropped(mix: Mix) -> Mix:
    """Every cell truly worse by the scenario's drop (the margin at the boundary, half of it near the margin),
    with `mix`'s fast / slow split."""
    return Mix(tuple(DROPPED for _ in mix.kinds), mix.fast)


def search_equal_power(tasks: Sequence[Task], mix: Mix, *, bases: Sequence[Design] = BASES,
                       offsets: Sequence[int] = OFFSETS, near: bool = True,
                       **simulate_kw) -> tuple[list[Design], dict]:
    """Each base design's smallest maximum repeats per task, Rc + j for j in `offsets`, at which BOTH tests have at
    least the fixed design's per-task power on the same draws (nested repeats: every candidate shares the fixed
    design's first Rc repeats): the worse test's (each task of a fast cell with a true drop called worse on its own,
    on `mix`) and, with `near`, the equivalence test's (each task of a fast cell truly worse by half the margin
    called equivalent, on draws of their own: `all_dropped`). Looks spend the worse test's alpha early, and an
    equivalence-only look the equivalence test's, so each may need its own repeats. Returns the chosen designs (the
    bases' names) and what the search saw: {base: {task: [(repeats, power, equivalence power or nan), ...]},
    'fixed': powers, 'fixed_equivalence': ..., 'result': the mixed draws' Result, 'near': the near draws'}."""
    tasks = list(tasks)
    if not (np.array(mix.fast) & mix.mask(DROPPED)).any():
        print("  (no fast dropped cell: nothing to match the per-task power on; the designs keep the fixed repeats)")
        return list(bases), {}
    cand = {b.name: [replace(b, name=f"{b.name} +{j}", repeats=tuple(t.cell_repeats + j for t in tasks))
                     for j in offsets] for b in bases}
    designs = [FIXED] + [d for v in cand.values() for d in v]
    res = simulate(tasks, mix, designs=designs, **simulate_kw)
    fixed = per_task_power(res, FIXED.name)
    if float(np.mean(fixed)) < MIN_POWER:
        print(f"  (the fixed design's per-task power is {np.mean(fixed):.1%}: below {MIN_POWER:.0%} there is no "
              "power to match, only noise; the designs keep the fixed repeats)")
        return list(bases), {"result": res}
    near_res, fixed_eq = None, np.full(len(tasks), np.nan)
    if near:
        near_kw = {**simulate_kw, "drop": simulate_kw["margin"] / 2, "check": 0,
                   "seed": [*np.atleast_1d(simulate_kw["seed"]).tolist(), 2]}
        near_res = simulate(tasks, all_dropped(mix), designs=designs, **near_kw)
        fixed_eq = per_task_equivalence(near_res, FIXED.name)
    chosen, seen, short = [], {"fixed": fixed, "fixed_equivalence": fixed_eq}, {}
    for b in bases:
        powers = np.array([per_task_power(res, d.name) for d in cand[b.name]])  # (J, K)
        eqs = (np.array([per_task_equivalence(near_res, d.name) for d in cand[b.name]]) if near
               else np.full(powers.shape, np.nan))
        reps, table = [], {}
        for k, t in enumerate(tasks):
            reach = powers[:, k] >= fixed[k] - 1e-12
            if near:
                reach &= eqs[:, k] >= fixed_eq[k] - 1e-12
            ok = np.nonzero(reach)[0]
            j = int(ok[0]) if ok.size else len(offsets) - 1
            if not ok.size:
                short[(b.name, t.name)] = (float(powers[j, k]), float(eqs[j, k]))
            reps.append(t.cell_repeats + offsets[j])
            table[t.name] = [(t.cell_repeats + offsets[i], float(powers[i, k]), float(eqs[i, k]))
                             for i in range(j + 1)]
        seen[b.name] = table
        chosen.append(replace(b, repeats=tuple(reps)))
    seen["short"], seen["result"], seen["near"] = short, res, near_res
    return chosen, seen


SEARCH_KEYS = ("fixed", "fixed_equivalence", "short", "result", "near")


def print_search(seen: dict, tasks: Sequence[Task], trials: int, seconds: float) -> None:
    if "fixed" not in seen:
        return
    eq = np.isfinite(seen["fixed_equivalence"]).all()
    near = " (and as many near the margin)" if eq else ""
    print(f"  equal-power search, {trials} simulated runs on the same draws{near} ({seconds:.0f} s): each design's "
          "smallest maximum repeats per task whose per-task power (fast dropped cells called worse) "
          + ("and equivalence power (fast cells truly worse by half the margin called equivalent) are" if eq
             else "is")
          + " at least the fixed design's: " + ", ".join(f"{t.name} {p:.1%}" for t, p in zip(tasks, seen["fixed"]))
          + ("; equivalence " + ", ".join(f"{t.name} {p:.1%}" for t, p in zip(tasks, seen["fixed_equivalence"]))
             if eq else ""))
    for name, table in seen.items():
        if name in SEARCH_KEYS:
            continue
        print(f"    {name}: " + "; ".join(
            f"{task} " + ", ".join(f"{r}: {p:.1%}" + (f"/{e:.1%}" if eq else "") for r, p, e in steps)
            for task, steps in table.items()))
    for (name, task), (p, e) in seen["short"].items():
        print(f"    NOT REACHED: {name} on {task} reaches only {p:.1%}" + (f" (equivalence {e:.1%})" if eq else "")
              + " at the largest repeats tried")
