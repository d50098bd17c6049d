"""Sizing a design before it runs: how many repeats per document a cell and its reference need for the gate's
decisions (analysis/equivalence.py) to be reached, and what margin given repeats can certify. Pure, normal
approximations; benchmarks/gate_false_alarms.py checks them by simulation. Meant for `evalharness plan`.

It owns:

- the model of a binary task: each document i has its own success probability p_i, drawn from a Beta distribution
  with mean `accuracy` and intra-class correlation `consistency` (rho = 1 / (a + b + 1): rho = 1 is a deterministic
  model, every document always right or always wrong; rho = 0 every answer an independent coin of the task's
  accuracy). A side's per-document score is the mean of its repeats;
- the variance of the paired drop (reference minus cell, analysis/stats.py) under that model. When nothing
  changed, the documents' own difficulty cancels in the pairing and only the answers' noise within a document is
  left: Var(drop) = E[p(1-p)] (1/Rc + 1/Rr) / docs. Under a true drop d (each p_i scaled by 1 - d/accuracy, as the
  benchmark simulates it) the cell's noise within a document changes and the drop itself differs between documents,
  which no number of repeats removes: `dropped_within_doc_variance` and `between_doc_drop_variance`;
- the z a comparison must reach: the "worse" test is Holm-adjusted over every cell x task of a run, and a single
  real regression is the family's smallest p-value, so it meets Holm's first step, alpha / family_size;
- the goals, each a ratio margin / standard error to reach:
  - "catch" (the default): a true drop of `drop` (default twice the margin) is called worse, lower bound above the
    margin, with probability `power`: (drop - margin) / se >= z(1 - alpha / family) + z(power);
  - "equivalent": a truly unchanged cell has probability `power` of a 90% (1 - 2 alpha) interval inside
    (-margin, margin): margin / se >= z(1 - alpha) + z((1 + power) / 2);
  - "noninferior" (the gate's pass): a truly unchanged cell's upper bound is below the margin with probability
    `power`: margin / se >= z(1 - alpha) + z(power);
- the split between cells and the reference: C cells share one reference, so one reference repeat costs one
  sample and narrows all C comparisons at once; the cheapest split of C Rc + Rr at a fixed v_c / Rc + v_r / Rr puts
  Rr / Rc = sqrt(C v_r / v_c) (about sqrt(C)); `repeats_needed` searches the integers for the cheapest pair that
  meets the goal (and returns None when none does: the documents' own spread of the drop is a floor);
- `repeats_for_task`, the entry point `plan` should use: the "catch" goal at the variance the test sees under the
  drop and Student's t at docs - 1 where repeats make the gate's test a t-test over documents. The low-level
  functions default to the plain formula (the null's variance on both sides, normal quantiles), which the
  benchmark shows under-sizes high-accuracy tasks.

Imports the standard library and scipy only.
"""

from __future__ import annotations

import math
from typing import Literal

from scipy.stats import norm, t as student_t

Goal = Literal["catch", "equivalent", "noninferior"]


def within_doc_variance(accuracy: float, consistency: float) -> float:
    """E[p (1 - p)] for p ~ Beta with mean `accuracy` and intra-class correlation `consistency`: the variance of one
    answer around its document's own probability, averaged over documents: accuracy (1 - accuracy) (1 - rho)."""
    _check_unit("accuracy", accuracy)
    _check_unit("consistency", consistency)
    return accuracy * (1 - accuracy) * (1 - consistency)


def dropped_within_doc_variance(accuracy: float, consistency: float, drop: float) -> float:
    """E[p' (1 - p')] for the dropped probabilities p' = p (1 - drop / accuracy): the cell's noise within a document
    under a true drop. E[p^2] = accuracy^2 + accuracy (1 - accuracy) rho. At accuracy 0.95, rho 0.5 a drop of 0.04
    raises it from 0.024 to 0.060: documents that were nearly always right become coins."""
    _check_unit("accuracy", accuracy)
    _check_unit("consistency", consistency)
    if drop == 0 or accuracy == 0:
        return within_doc_variance(accuracy, consistency)
    if not 0 <= drop <= accuracy:
        raise ValueError(f"drop {drop} must lie between 0 and the accuracy {accuracy}")
    k = 1 - drop / accuracy
    second_moment = accuracy ** 2 + accuracy * (1 - accuracy) * consistency
    return k * accuracy - k * k * second_moment


def between_doc_drop_variance(accuracy: float, consistency: float, drop: float) -> float:
    """Var over documents of the expected drop (drop / accuracy) p_i: the part of the drop's spread that repeats do
    not reduce. (drop / accuracy)^2 accuracy (1 - accuracy) rho."""
    _check_unit("accuracy", accuracy)
    _check_unit("consistency", consistency)
    if drop == 0 or accuracy == 0:
        return 0.0
    return (drop / accuracy) ** 2 * accuracy * (1 - accuracy) * consistency


def standard_error(within_var: float, docs: int, cell_repeats: int, reference_repeats: int, *,
                   cell_within_var: float | None = None, between_var: float = 0.0) -> float:
    """The paired drop's standard error over `docs` documents: sqrt(within_var (1/Rc + 1/Rr) / docs), or with the
    cell's own within-document variance and the drop's spread between documents where they differ (a true drop):
    sqrt((within_var / Rr + cell_within_var / Rc + between_var) / docs)."""
    if docs < 1 or cell_repeats < 1 or reference_repeats < 1:
        raise ValueError("docs and repeats must be at least 1")
    cell_var = within_var if cell_within_var is None else cell_within_var
    return math.sqrt((within_var / reference_repeats + cell_var / cell_repeats + between_var) / docs)


def family_z(alpha: float, family_size: int) -> float:
    """The one-sided z of Holm's first step over `family_size` tests: norm.ppf(1 - alpha / family_size)."""
    if family_size < 1:
        raise ValueError("family_size must be at least 1")
    return float(norm.ppf(1 - alpha / family_size))


def critical_value(level: float, df: int | None = None) -> float:
    """The one-sided quantile the test compares with: normal (df None: the score test of single 0/1 samples, and the
    brief's formula) or Student's t with `df` degrees of freedom (the t-test over documents the gate runs when
    repeats make the scores non-binary: df = docs - 1)."""
    return float(norm.ppf(level) if df is None else student_t.ppf(level, df))


def required_ratio(goal: Goal = "catch", *, alpha: float = 0.05, power: float = 0.8, family_size: int = 1,
                   df: int | None = None) -> float:
    """The z sum a goal needs (see the module's docstring): margin / se for "equivalent" and "noninferior",
    (drop - margin) / se for "catch". With `df`, the test's own quantile is Student's t (the power's stays normal)."""
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError("alpha and power must lie strictly between 0 and 1")
    if family_size < 1:
        raise ValueError("family_size must be at least 1")
    if goal == "catch":
        return critical_value(1 - alpha / family_size, df) + float(norm.ppf(power))
    if goal == "equivalent":
        return critical_value(1 - alpha, df) + float(norm.ppf((1 + power) / 2))
    if goal == "noninferior":
        return critical_value(1 - alpha, df) + float(norm.ppf(power))
    raise ValueError(f"unknown goal {goal!r}")


def _cheapest_split(reference_var: float, cell_var: float, budget: float, cells: int,
                    reference_share: float | None) -> tuple[int, int] | None:
    """The integer (Rc, Rr) with reference_var / Rr + cell_var / Rc <= budget (a variance, times docs, that the
    fixed part leaves) of the lowest cost cells Rc + Rr (at equal cost: the smaller variance, then the larger
    reference); with `reference_share`, the fewest Rc with Rr = ceil(share Rc) instead."""
    if budget <= 0:
        return None
    if reference_var == 0 and cell_var == 0:
        return 1, 1
    if reference_share is not None:
        if reference_share <= 0:
            raise ValueError("reference_share must be positive")
        rc = max(1, math.ceil((cell_var + reference_var / reference_share) / budget - 1e-12))
        while True:  # ceil(share rc) may be a little more than share rc: verify, step up if rounding failed
            rr = max(1, math.ceil(reference_share * rc - 1e-9))
            if reference_var / rr + cell_var / rc <= budget * (1 + 1e-12):
                return rc, rr
            rc += 1
    # continuous optimum: Rr / Rc = sqrt(C v_r / v_c); search the integers around it for the cheapest pair
    if cell_var == 0:
        return 1, max(1, math.ceil(reference_var / budget - 1e-12))
    if reference_var == 0:
        return max(1, math.ceil(cell_var / budget - 1e-12)), 1
    ratio = math.sqrt(cells * reference_var / cell_var)
    rc_cont = (cell_var + reference_var / ratio) / budget
    best: tuple[tuple[float, float, int], int, int] | None = None  # (cost, variance, -Rr): cheapest, then tightest
    lowest_rc = max(1, math.floor(cell_var / budget) + 1)  # fewer cell repeats cannot meet the budget at all
    for rc in range(lowest_rc, max(lowest_rc, math.ceil(4 * rc_cont)) + 2):
        left = budget - cell_var / rc
        if left <= 0:
            continue
        rr = max(1, math.ceil(reference_var / left - 1e-12))
        while reference_var / rr + cell_var / rc > budget * (1 + 1e-12):
            rr += 1
        key = (cells * rc + rr, reference_var / rr + cell_var / rc, -rr)
        if best is None or key < best[0]:
            best = (key, rc, rr)
    return None if best is None else (best[1], best[2])


def repeats_needed(within_var: float, docs: int, margin: float, *, alpha: float = 0.05, power: float = 0.8,
                   cells: int = 1, tasks: int = 1, reference_share: float | None = None, goal: Goal = "catch",
                   drop: float | None = None, cell_within_var: float | None = None,
                   between_var: float = 0.0, df: int | None = None) -> tuple[int, int] | None:
    """(cell_repeats, reference_repeats): the cheapest repeats per document (cost cells x Rc + Rr) that reach `goal`
    for one task of `docs` documents at `margin`:

    - "catch" (default): a true drop of `drop` (default 2 x margin) in one cell is called worse, its p-value
      Holm-adjusted over cells x tasks comparisons, with probability `power`;
    - "equivalent" / "noninferior": a truly unchanged cell is settled so with probability `power` (no family
      adjustment: neither test is adjusted in the gate).

    `within_var` is E[p(1-p)] (`within_doc_variance`), the same on both sides when nothing changed. The plain
    sizing uses it for the cell too; pass `cell_within_var` and `between_var` (`dropped_within_doc_variance`,
    `between_doc_drop_variance` at the drop) for the variance under the drop to be caught, which is what the test
    will see. `reference_share`: the reference's repeats as a multiple of a cell's (1.0: the same on both sides);
    None: the cheapest split, about sqrt(cells) times. None when no repeats reach the goal (the drop's spread between
    documents alone is too large: more documents, not repeats, are needed). `df`: compare with Student's t at these
    degrees of freedom (docs - 1: the t-test over documents the gate runs on repeats) instead of the normal. Every
    returned pair is verified by the formula: `standard_error` of it meets the goal."""
    if margin <= 0:
        raise ValueError("margin must be positive")
    if cells < 1 or tasks < 1 or docs < 1:
        raise ValueError("cells, tasks and docs must be at least 1")
    ratio = required_ratio(goal, alpha=alpha, power=power, family_size=cells * tasks, df=df)
    distance = (2 * margin if drop is None else drop) - margin if goal == "catch" else margin
    if distance <= 0:
        raise ValueError("the drop to catch must exceed the margin")
    se_goal = distance / ratio
    cell_var = within_var if cell_within_var is None else cell_within_var
    budget = se_goal ** 2 * docs - between_var
    split = _cheapest_split(within_var, cell_var, budget, cells, reference_share)
    if split is None:
        return None
    rc, rr = split
    se = standard_error(within_var, docs, rc, rr, cell_within_var=cell_var, between_var=between_var)
    assert se <= se_goal * (1 + 1e-9), (rc, rr, se, se_goal)  # verified by the formula
    return split


def repeats_for_equivalence(within_var: float, docs: int, margin: float, *, alpha: float = 0.05,
                            power: float = 0.8, cells: int = 1,
                            reference_share: float | None = None) -> tuple[int, int] | None:
    """(cell_repeats, reference_repeats) such that a truly unchanged cell's 90% interval of the drop lies inside
    (-margin, margin) with probability `power`: margin / se >= z(1 - alpha) + z((1 + power) / 2)."""
    return repeats_needed(within_var, docs, margin, alpha=alpha, power=power, cells=cells,
                          reference_share=reference_share, goal="equivalent")


def reachable_margin(within_var: float, docs: int, cell_repeats: int, reference_repeats: int, *,
                     alpha: float = 0.05, power: float = 0.8, cells: int = 1, tasks: int = 1, goal: Goal = "catch",
                     cell_within_var: float | None = None, between_var: float = 0.0, df: int | None = None) -> float:
    """The inverse of `repeats_needed`: the smallest margin these repeats certify in the same sense. "catch": a
    true drop of twice the margin is called worse with probability `power` (margin = ratio x se); "equivalent" /
    "noninferior": an unchanged cell is settled so with probability `power` (margin = ratio x se). The variances
    are taken as given (under a drop they depend on the drop, hence on the margin: pass them at the drop meant)."""
    ratio = required_ratio(goal, alpha=alpha, power=power, family_size=cells * tasks, df=df)
    return ratio * standard_error(within_var, docs, cell_repeats, reference_repeats,
                                  cell_within_var=cell_within_var, between_var=between_var)


def repeats_for_task(accuracy: float, consistency: float, docs: int, margin: float, *, alpha: float = 0.05,
                     power: float = 0.8, cells: int = 1, tasks: int = 1,
                     reference_share: float | None = None) -> tuple[int, int] | None:
    """The recommended sizing of one binary task for the "catch" goal (what `evalharness plan` should print): as
    `repeats_needed`, but with the variance the test will see under the drop of twice the margin (the cell's own
    within-document variance there and the drop's spread between documents) and Student's t at docs - 1 degrees of
    freedom where repeats make the gate's test a t-test. The plain formula (the null's variance, normal quantiles)
    under-sizes high-accuracy tasks: benchmarks/gate_false_alarms.py caught a drop of 0.04 on gsm8k (200 documents
    at 0.95, consistency 0.5, 24 cells x 4 tasks) in 25% of runs at its repeats (6 / 32), against 80% promised;
    at these (15 / 44) in 81%."""
    drop = 2 * margin
    within = within_doc_variance(accuracy, consistency)
    extra = dict(cell_within_var=dropped_within_doc_variance(accuracy, consistency, min(drop, accuracy)),
                 between_var=between_doc_drop_variance(accuracy, consistency, min(drop, accuracy)))
    return _repeats_with_t(within, docs, margin, alpha=alpha, power=power, cells=cells, tasks=tasks,
                           reference_share=reference_share, **extra)


def _repeats_with_t(within_var: float, docs: int, margin: float, **options) -> tuple[int, int] | None:
    """`repeats_needed` with Student's t at docs - 1 where the answer has repeats (they make the test a t-test over
    documents); single samples stay with the score test's normal quantiles."""
    plain = repeats_needed(within_var, docs, margin, **options)
    if plain is None or plain == (1, 1):
        return plain
    return repeats_needed(within_var, docs, margin, df=docs - 1, **options)


def certified_margin(accuracy: float, consistency: float, docs: int, cell_repeats: int, reference_repeats: int, *,
                     alpha: float = 0.05, power: float = 0.8, cells: int = 1, tasks: int = 1,
                     step: float = 0.0005) -> float | None:
    """What a configured design certifies in the sense `repeats_for_task` sizes for: the smallest margin m (on a grid
    of `step`) at which these repeats catch a true drop of 2m with probability `power`, at the variance the test sees
    under that drop and with Student's t at docs - 1 where repeats make the test a t-test. The inverse of
    `repeats_for_task`, so `plan`'s columns come from one sizing (issue 37: the plain `reachable_margin` said 6 / 32
    repeats certify ±0.018 on gsm8k at 0.95 where 12 / 36 are needed for ±0.02; their power there was 43%). None when
    no margin up to half the accuracy is reached (the documents' own spread of the drop is too large)."""
    if docs < 1 or cell_repeats < 1 or reference_repeats < 1:
        raise ValueError("docs and repeats must be at least 1")
    within = within_doc_variance(accuracy, consistency)
    single = cell_repeats == 1 and reference_repeats == 1
    ratio = required_ratio("catch", alpha=alpha, power=power, family_size=cells * tasks,
                           df=None if single else docs - 1)

    def reached(margin: float) -> bool:
        drop = min(2 * margin, accuracy)
        se = standard_error(within, docs, cell_repeats, reference_repeats,
                            cell_within_var=dropped_within_doc_variance(accuracy, consistency, drop),
                            between_var=between_doc_drop_variance(accuracy, consistency, drop))
        return (drop - margin) >= ratio * se

    top = accuracy / 2
    if top <= 0 or not reached(top):
        return None
    # reached() is monotone in the margin at these sizes (the distance grows as m, the standard error more slowly);
    # bisect, then snap up to the grid so the figure printed is one the design does reach
    low, high = 0.0, top
    while high - low > 1e-7:
        mid = (low + high) / 2
        low, high = (low, mid) if reached(mid) else (mid, high)
    snapped = math.ceil(high / step - 1e-3) * step  # a bisection a hair above a grid point snaps to it
    return snapped if reached(snapped) else high


def _check_unit(name: str, value: float) -> None:
    if not 0 <= value <= 1:
        raise ValueError(f"{name} must lie between 0 and 1, not {value}")


def confirmation_margin(accuracy: float, consistency: float, docs: int, repeats: int, reference_repeats: int, *,
                        alpha: float = 0.05, tries: int = 1, power: float = 0.8) -> float:
    """What the confirmation stage certifies on one task (issue 61): the smallest margin at which a truly unchanged
    finalist's one-sided upper bound of the drop (reference minus finalist, paired by document) lies below it with
    probability `power`, the test at alpha / tries (each try of a finalist spends its share; the tasks are an
    intersection-union test, each at that full level, and one finalist is tested: no family adjustment). The
    "noninferior" goal at the null's variance, Student's t at docs - 1 where repeats make the test a t-test over
    documents. 0 where the answers never vary within a document (consistency 1): the caller prices that case."""
    within = within_doc_variance(accuracy, consistency)
    single = repeats == 1 and reference_repeats == 1
    return reachable_margin(within, docs, repeats, reference_repeats, alpha=alpha / tries, power=power,
                            goal="noninferior", df=None if single else docs - 1)


def confirmation_repeats(accuracy: float, consistency: float, docs: int, margin: float, *, alpha: float = 0.05,
                         tries: int = 1, power: float = 0.8,
                         reference_share: float = 1.0) -> tuple[int, int] | None:
    """(finalist repeats, reference repeats) per document that `confirmation_margin` needs to certify `margin`: the
    fewest finalist repeats with the reference's at `reference_share` times them. None when no repeats reach it."""
    return _repeats_with_t(within_doc_variance(accuracy, consistency), docs, margin, alpha=alpha / tries,
                           power=power, goal="noninferior", reference_share=reference_share)


def detectable_drop(accuracy: float, consistency: float, docs: int, cell_repeats: int, reference_repeats: int,
                    margin: float, *, alpha: float = 0.05, power: float = 0.8, cells: int = 1,
                    tasks: int = 1) -> float | None:
    """What an exploration sample rules out on one task: the smallest true drop that the drift "worse" verdict at
    `margin` (the lower bound of the drop above it, Holm over cells x tasks) reaches with probability `power`, at the
    variance the test sees under that drop (as `certified_margin`). None when no drop up to the accuracy is."""
    if docs < 1 or cell_repeats < 1 or reference_repeats < 1:
        raise ValueError("docs and repeats must be at least 1")
    within = within_doc_variance(accuracy, consistency)
    single = cell_repeats == 1 and reference_repeats == 1
    ratio = required_ratio("catch", alpha=alpha, power=power, family_size=cells * tasks,
                           df=None if single else docs - 1)

    def reached(drop: float) -> bool:
        se = standard_error(within, docs, cell_repeats, reference_repeats,
                            cell_within_var=dropped_within_doc_variance(accuracy, consistency, drop),
                            between_var=between_doc_drop_variance(accuracy, consistency, drop))
        return drop - margin >= ratio * se

    if accuracy <= margin or not reached(accuracy):
        return None
    low, high = margin, accuracy
    while high - low > 1e-6:
        mid = (low + high) / 2
        low, high = (low, mid) if reached(mid) else (mid, high)
    return high
