"""The simulated runs of benchmarks/sequential_design.py: every design on the same draws (`simulate`), decided by the
numpy replica, and the check of its first runs against the package's own functions, look by look
(`decide_with_package`).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from benchmarks.gate_replica import holm_adjusted
from benchmarks.paired_replica import Evidence
from benchmarks.sequential_designs import FIXED, PACKAGE, Design, Result
from benchmarks.sequential_model import (BROKEN, CODE, DROPPED, EQUIVALENT, INCONCLUSIVE, SCREEN_DOCUMENTS, WORSE,
                                         Equivalence, Mix, Task, verdict_of)
from evalharness.analysis.equivalence import cell_outcome, decide_family
from evalharness.analysis.sequential import decide_look, final_levels, quality_levels, screened
from evalharness.analysis.stats import paired_evidence

def _factors(task: Task, mix: Mix, drop: float, broken_factor: float) -> np.ndarray:
    out = np.ones(mix.cells)
    for c, kind in enumerate(mix.kinds):
        if kind == BROKEN:
            out[c] = broken_factor
        elif kind == DROPPED:
            if drop > task.accuracy:
                raise ValueError(f"{task.name}: a drop of {drop} exceeds the accuracy {task.accuracy}")
            out[c] = 1 - drop / task.accuracy if task.accuracy > 0 else 1.0
    return out


def simulate(tasks: Sequence[Task], mix: Mix, *, margin: float, alpha: float, drop: float, broken_factor: float,
             trials: int, seed: int | Sequence[int], check: int = 0, chunk: int = 100,
             screen_documents: float = SCREEN_DOCUMENTS, designs: Sequence[Design] = (FIXED, PACKAGE),
             calibrate: bool = False) -> Result:
    """`trials` simulated runs of every design on the same draws: a cell's repeats are nested (its data after R
    repeats is the first R of the draws any longer design uses), so the designs differ only by their rule and their
    repeats. A screened cell answers `screen_documents` of the documents of a task it runs once (the first of them:
    draws are exchangeable, like the seeded order's prefix). The first `check` runs are also decided by the package's
    own functions for every design. `calibrate`: equivalence (a look's stop and the verdict) by the package's
    calibrated test, as the package decides it (slow: a few ms a (trial, cell, task) still running at a look);
    without, by the t (the worse test is the t either way, as in the package)."""
    tasks, designs = list(tasks), list(designs)
    if len({d.name for d in designs}) != len(designs):
        raise ValueError("designs need distinct names")
    cells, family = mix.cells, mix.cells * len(tasks)
    fast = np.array([not screened(verdict_of(f), False) for f in mix.fast])
    slow_cells = np.broadcast_to(~fast, (min(chunk, trials), cells))
    plans = {d.name: d.plans(tasks) for d in designs}
    eq_only = {d.name: d.equivalence_only(tasks) for d in designs}
    maxima = {d.name: d.max_repeats(tasks) for d in designs}
    runs_all = {d.name: fast | (not d.screening) for d in designs}  # (C,) the cells that run the design's looks
    # every repeat count any design looks at, per task (the first look, one repeat, is where a screened cell stops)
    points = [sorted({1}.union(*(plans[d.name][k] for d in designs))) for k in range(len(tasks))]
    rng = np.random.default_rng(seed)
    acc = {d.name: ([], []) for d in designs}
    result = Result(tasks, mix, designs, {}, {}, alpha=alpha)
    done = 0
    while done < trials:
        size = min(chunk, trials - done)
        n_check = max(0, min(size, check - done))
        refs, looks_data = [], []
        per_design = {d.name: [] for d in designs}  # per task: (p, eq, alpha, reached, first worse look's repeats)
        for k, task in enumerate(tasks):
            p = task.draw_p(rng, size)
            ref = rng.binomial(task.reference_repeats, p) / task.reference_repeats
            cell_p = np.clip(p[:, None, :] * _factors(task, mix, drop, broken_factor)[None, :, None], 0.0, 1.0)
            counts, before, evid, p_above, kept = np.zeros(cell_p.shape), 0, {}, {}, {}
            for point in points[k]:  # nested repeats: each point adds its repeats to the ones before
                counts = counts + rng.binomial(point - before, cell_p)
                before = point
                data = counts / point
                evid[point] = Evidence.of(ref, data)
                p_above[point] = evid[point].p_above(margin)
                if point == 1:
                    first = data
                if n_check:
                    kept[point] = data[:n_check]
            refs.append(ref[:n_check])
            looks_data.append(kept)
            eq = Equivalence(evid, margin, calibrate)
            screens: dict[int | None, tuple] = {}
            for d in designs:
                looks, only = plans[d.name][k], eq_only[d.name][k]
                levels = quality_levels(alpha, looks, family, only)
                finals = np.array([final_levels(alpha, looks, r, family, only).worse for r in looks])
                stop = np.zeros((len(looks), size, cells), bool)
                worse_at = np.zeros((len(looks), size, cells), bool)
                running = np.broadcast_to(runs_all[d.name][None, :], (size, cells)).copy()
                for j, lv in enumerate(levels[:-1]):  # the last look is the final analysis, not a stopping look
                    worse_at[j] = p_above[looks[j]] < lv.worse / max(1, family)
                    stop[j] = worse_at[j] | (eq.at(looks[j], lv.equivalent, running & ~worse_at[j]) & running)
                    running &= ~stop[j]
                first_stop = np.where(stop.any(axis=0), np.argmax(stop, axis=0), len(looks) - 1)
                # a task finds the cell worse only where its first stop is a worse (an equivalent stop ends it first)
                stopped_worse = np.take_along_axis(worse_at, first_stop[None], axis=0)[0]
                first_worse = np.where(stopped_worse, first_stop, len(looks))
                # a screened cell's evidence: one repeat, which for a task it runs once is a batch of documents
                sub = task.screened_docs(screen_documents, maxima[d.name][k])
                if sub not in screens:  # a slow cell's: the same cells in every design that screens
                    sub_evid = evid[1] if sub is None else Evidence.of(ref[:, :sub], first[..., :sub])
                    screens[sub] = (sub_evid.p_above(margin),
                                    Equivalence({1: sub_evid}, margin, calibrate).at(1, alpha, slow_cells[:size]),
                                    1.0 if sub is None else sub / task.docs)
                per_design[d.name].append((looks, finals, first_stop, first_worse, screens[sub],
                                           [p_above[r] for r in looks], (eq, [lv.equivalent for lv in levels])))
        for d in designs:
            tasks_of = per_design[d.name]
            cut_round = np.full((size, cells), np.inf)
            if d.cell_stop:  # a cell is worse once any task is: its other tasks stop at the look that found it
                for looks, _, _, first_worse, *_ in tasks_of:
                    rounds = np.where(first_worse < len(looks), np.asarray(looks)[np.minimum(first_worse,
                                                                                             len(looks) - 1)], np.inf)
                    cut_round = np.minimum(cut_round, rounds)
            ps, eqs, alphas, reached = [], [], [], []
            full = runs_all[d.name][None, :]
            for looks, finals, first_stop, _, screen, p_looks, (eq, eq_levels) in tasks_of:
                looks_arr = np.asarray(looks)
                # the look each task ends at: its first stop, the cell's worse round, or the last look
                cut = np.searchsorted(looks_arr, np.minimum(cut_round, looks_arr[-1]))
                idx = np.where(full, np.minimum(first_stop, cut), 0)
                pick = lambda arrays: np.take_along_axis(np.stack(arrays), idx[None], axis=0)[0]  # noqa: E731
                ps.append(np.where(full, pick(p_looks), screen[0]))
                # decide()'s interval at final_levels = the look's levels: the same test, asked only where the task
                # ended at that look; a screened cell is a fixed design of its first look, at the full alpha
                ended = np.zeros((size, cells), bool)
                for j, (r, level) in enumerate(zip(looks, eq_levels)):
                    here = full & (idx == j)
                    if np.any(here):
                        ended |= eq.at(r, level, here) & here
                eqs.append(np.where(full, ended, screen[1]))
                alphas.append(np.where(full, finals[idx], alpha))
                reached.append(np.where(full, looks_arr[idx], screen[2]))  # repeats, or a share of one
            p = np.stack(ps, axis=-1).reshape(size, family)
            level = np.stack(alphas, axis=-1).reshape(size, family)
            worse = (holm_adjusted(p) < level).reshape(size, cells, len(tasks))
            acc[d.name][0].append(np.where(worse, WORSE, np.where(np.stack(eqs, axis=-1), EQUIVALENT, INCONCLUSIVE)))
            acc[d.name][1].append(np.stack(reached, axis=-1))
        for i in range(n_check):
            _check(result, tasks, mix, refs, looks_data, i, margin, alpha, designs,
                   {d.name: acc[d.name][0][-1][i] for d in designs}, {d.name: acc[d.name][1][-1][i] for d in designs},
                   done + i, screen_documents, calibrate)
        done += size
    result.outcomes = {d.name: np.concatenate(acc[d.name][0]) for d in designs}
    result.reached_by = {d.name: np.concatenate(acc[d.name][1]) for d in designs}
    return result


def decide_with_package(tasks: Sequence[Task], mix: Mix, refs: Sequence[np.ndarray],
                        looks_data: Sequence[dict[int, np.ndarray]], margin: float, alpha: float,
                        design: Design = PACKAGE, screen_documents: float = SCREEN_DOCUMENTS, calibrate: bool = False
                        ) -> tuple[np.ndarray, np.ndarray, list]:
    """One run of one design decided by the package's own functions, look by look. refs[k] (n,); looks_data[k][R]
    (C, n): each cell's mean per document after R repeats. (outcomes (C, K), repeats reached (C, K), cell outcomes).
    `calibrate`: the package's evidence as it decides (the calibrated equivalence test); without, the t alone
    (`paired_evidence(..., calibrate=False)`), the replica's fast mode."""
    cells, family = mix.cells, mix.cells * len(tasks)
    plans_all, maxima = design.plans(tasks), design.max_repeats(tasks)
    evidence_of, alphas = {}, {}
    reached = np.zeros((cells, len(tasks)))
    for c in range(cells):
        runs_all = not (design.screening and screened(verdict_of(mix.fast[c]), full_quality=False))
        # as the quality phase does it, repeat by repeat: a task looks at its own looks and stops when settled;
        # with cell_stop, once one is worse every other task of the cell stops at its next look; a screened cell
        # is a fixed design of its first look
        plans = {k: list(plans_all[k]) if runs_all else [1] for k in range(len(tasks))}
        only = {k: design.equivalence_only(tasks)[k] if runs_all else [] for k in range(len(tasks))}
        end = {k: v[-1] for k, v in plans.items()}
        chosen: dict[int, tuple] = {}
        for done in sorted({r for v in plans.values() for r in v}):
            found_worse = False
            for k, task in enumerate(tasks):
                if done not in plans[k] or done > end[k]:
                    continue
                # a screened cell of a task it runs once answers the first documents of the seeded order
                kept = None if runs_all else task.screened_docs(screen_documents, maxima[k])
                evidence = paired_evidence(refs[k][:kept], looks_data[k][done][c][:kept], calibrate=calibrate)
                chosen[k] = (evidence, done, 1.0 if kept is None else kept / task.docs)
                if done == end[k]:
                    continue
                levels = quality_levels(alpha, plans[k], family, only[k])
                stop = decide_look(evidence, margin, levels[plans[k].index(done)], family_size=family).stop
                if stop is not None:
                    end[k] = done
                    found_worse |= stop == "worse"
            if found_worse and design.cell_stop:
                for k in plans:
                    if end[k] > done:
                        end[k] = next(r for r in plans[k] if r >= done)
        for k, task in enumerate(tasks):
            evidence, look, share = chosen[k]
            reached[c, k] = look * share
            evidence_of[(c, task.name)] = (evidence, margin)
            alphas[(c, task.name)] = final_levels(alpha, plans[k], look, family, only[k])
    decisions = decide_family(evidence_of, alpha, alphas)
    out = np.array([[CODE[decisions[(c, t.name)].outcome] for t in tasks] for c in range(cells)])
    cell_level = [cell_outcome(decisions[(c, t.name)].outcome for t in tasks) for c in range(cells)]
    return out, reached, cell_level


def _check(result: Result, tasks, mix, refs, looks_data, i, margin, alpha, designs: Sequence[Design],
           outcomes: dict[str, np.ndarray], reached: dict[str, np.ndarray], run: int, screen_documents: float,
           calibrate: bool) -> None:
    """Run i of the chunk decided by the package for every design; a run agrees when every design's does."""
    wrong = []
    for d in designs:
        o, r, cl = decide_with_package(tasks, mix, [x[i] for x in refs], [{k: v[i] for k, v in x.items()}
                                                                             for x in looks_data],
                                       margin, alpha, d, screen_documents, calibrate)
        same = (np.array_equal(o, outcomes[d.name]) and np.array_equal(r, reached[d.name])
                and [CODE[x] for x in cl] == Result.cell_level(outcomes[d.name][None])[0].tolist())
        if not same:
            wrong.append(f"{d.name}: {int(np.sum(o != outcomes[d.name]))} outcomes, "
                         f"{int(np.sum(r != reached[d.name]))} repeats reached differ")
    result.checked += 1
    result.agreed += not wrong
    if wrong:
        result.disagreements.append(f"run {run}: " + "; ".join(wrong))
