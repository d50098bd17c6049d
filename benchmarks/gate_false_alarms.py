"""How often does the gate fail a run in which nothing changed, and how often does it catch a real drop?

The null simulated is the right one: the reference (or baseline) and every cell are independent draws from the same
per-document success probabilities. Per task (documents n, accuracy mu, consistency rho) and per simulated run:

- each document's probability p_i ~ Beta(mu (1/rho - 1), (1 - mu) (1/rho - 1)), so rho is the intra-class
  correlation of a document's answers (rho = 1: p_i in {0, 1}, Bernoulli(mu), a deterministic engine; rho = 0:
  every answer an independent coin of probability mu); or p_i given directly (`TaskSpec.p`, fixed over runs);
- the reference's score of a document: Binomial(Rr, p_i) / Rr; each cell's, independently: Binomial(Rc, p_i) / Rc;
  a cell with a true drop d answers with p_i (1 - d / mu) instead (every task of that cell drops by d);
- the decision rule as the gate runs it: `paired_evidence(reference, cell)` per (cell, task), `decide_family` over
  every cell x task of the run at the margin (Holm over the whole family for the "worse" test), `gate_outcome` per
  cell (fail: any task worse; pass: every task non-inferior; else inconclusive).

The decisions of every simulated run are computed by a numpy replica of those three functions (the same tests:
Tango's continuity-corrected score test for 0/1 sides, the t-test over documents otherwise, Holm's step-down), and
the first `--check` runs of every scenario are also decided by the package's own functions: the script says how many
agreed and exits 1 if any did not, so the replica cannot drift from the rule it stands for. One exception: the
pass (every task non-inferior) is the plain t's here, in the replica and in the check (`paired_evidence(...,
calibrate=False)`); the package calibrates it by resampling (analysis/nullboot.py, about 2 ms a comparison, too slow
for 192,000 comparisons a line), which only makes a pass rarer: benchmarks/recommendation.py measures it. The
false alarms (the worse test) are the package's exactly.
(`simulate_run(..., exact=True)` decides every run with the package's functions, at about 0.1 s a 24 x 4 run.)

Regimes: `sm120` (the sm120 matrix: 24 cells, gsm8k 200 documents at 0.95, gpqa_diamond 198 at 0.80, mmlu_pro 210 at
0.82, ifeval 200 at 0.88, margin 0.02, alpha 0.05, consistency 0.5 and 0.75; single samples and the repeats
analysis/sizing.py plans per task) and `demo` (baselines/cpu-smollm2.json's tasks at its sizes and accuracies,
3 cells, margin 0.1, consistency 1.0 and 0.5). It also times the package's decision code on one 24 x 4 run.

    .venv/bin/python benchmarks/gate_false_alarms.py [--regime sm120|demo|all] [--trials 2000] [--seed 1]
"""

from __future__ import annotations

import argparse
import sys
import time
import zlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
from scipy.stats import norm, t as student_t

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

from evalharness.analysis import sizing  # noqa: E402
from evalharness.analysis.equivalence import decide_family, gate_outcome  # noqa: E402
from evalharness.analysis.stats import PairedEvidence, holm, paired_evidence, tango_z  # noqa: E402

PASS, INCONCLUSIVE, FAIL = 0, 1, 2
OUTCOME_CODE = {"pass": PASS, "inconclusive": INCONCLUSIVE, "fail": FAIL}


@dataclass(frozen=True)
class TaskSpec:
    """One task of a simulated run: `docs` documents at `accuracy` with `consistency` (the Beta model), or the
    per-document probabilities `p` themselves (then docs and accuracy follow from p and consistency is unused; an
    empirical A/A can supply them). `cell_repeats` / `reference_repeats`: samples per document on each side."""

    name: str
    docs: int | None = None
    accuracy: float | None = None
    consistency: float = 0.5
    p: np.ndarray | None = field(default=None, compare=False)
    cell_repeats: int = 1
    reference_repeats: int = 1

    def __post_init__(self) -> None:
        if self.p is not None:
            p = np.asarray(self.p, dtype=float)
            if p.ndim != 1 or len(p) < 2 or np.any((p < 0) | (p > 1)):
                raise ValueError(f"{self.name}: p must be a 1-d array of probabilities, at least 2 documents")
            object.__setattr__(self, "p", p)
            object.__setattr__(self, "docs", len(p))
            object.__setattr__(self, "accuracy", float(p.mean()))
        elif self.docs is None or self.accuracy is None or self.docs < 2:
            raise ValueError(f"{self.name}: give p, or docs (at least 2) and accuracy")
        if self.cell_repeats < 1 or self.reference_repeats < 1:
            raise ValueError(f"{self.name}: repeats must be at least 1")

    def draw_p(self, rng: np.random.Generator, trials: int) -> np.ndarray:
        """(trials, docs) per-document probabilities, one draw per simulated run (fixed p: the same every run)."""
        n, mu, rho = self.docs, self.accuracy, self.consistency
        if self.p is not None:
            return np.broadcast_to(self.p, (trials, n))
        if mu <= 0 or mu >= 1 or rho <= 0:
            return np.full((trials, n), float(mu))
        if rho >= 1:
            return (rng.random((trials, n)) < mu).astype(float)
        scale = 1 / rho - 1
        return rng.beta(mu * scale, (1 - mu) * scale, size=(trials, n))


@dataclass
class RunResult:
    """Outcomes of `trials` simulated runs: `outcome[t, c]` (PASS / INCONCLUSIVE / FAIL), `worse[t, c, k]` (task k
    of cell c called worse), and how many runs the package's own functions decided alike (`checked`, `agreed`)."""

    tasks: list[TaskSpec]
    cells: int
    drops: dict[int, float]
    outcome: np.ndarray
    worse: np.ndarray
    checked: int = 0
    agreed: int = 0

    @property
    def trials(self) -> int:
        return int(self.outcome.shape[0])

    def unchanged(self) -> np.ndarray:
        return np.array([c not in self.drops or self.drops[c] == 0 for c in range(self.cells)])

    def cell_false_fail(self) -> float:
        """Share of (run, unchanged cell) pairs that fail."""
        return float(np.mean(self.outcome[:, self.unchanged()] == FAIL))

    def run_false_fail(self) -> float:
        """Share of runs in which any unchanged cell fails."""
        return float(np.mean(np.any(self.outcome[:, self.unchanged()] == FAIL, axis=1)))

    def share(self, code: int) -> float:
        """Share of (run, unchanged cell) pairs with this outcome."""
        return float(np.mean(self.outcome[:, self.unchanged()] == code))

    def caught(self, cell: int) -> float:
        """Share of runs in which `cell` fails."""
        return float(np.mean(self.outcome[:, cell] == FAIL))

    def caught_per_task(self, cell: int) -> list[float]:
        return [float(v) for v in np.mean(self.worse[:, cell, :], axis=0)]


# ----------------------------------------------------------------------------------------------------- the replica



@dataclass
class Tests:
    """Per (trial, cell): the one-sided p-values of "drop >= margin" (small: credibly below the margin; the gate's
    pass), of "drop <= -margin" and of "drop <= margin" (small: credibly worse)."""

    p_below_margin: np.ndarray
    p_above_minus_margin: np.ndarray
    p_above_margin: np.ndarray

    @property
    def p_equivalent(self) -> np.ndarray:
        return np.maximum(self.p_below_margin, self.p_above_minus_margin)


def task_tests(ref: np.ndarray, cell: np.ndarray, margin: float, calibrate: bool = False,
               level: float = 0.05) -> Tests:
    """For a (T, n) reference and (T, C, n) cells: `paired_evidence(ref, cell)`'s one-sided p-values at +-margin,
    replicated in numpy (0/1 on both sides: Tango's score test; otherwise the t-test over documents, with the
    package's fallbacks where the differences do not vary). `calibrate`: the two pass-side p-values on the t path
    by the package's calibrated test (`PairedEvidence.calibrated_p` on each comparison, resamples for `level`:
    about 2 ms a row, too slow for this benchmark's 192,000 comparisons a line, so its lines use the t alone and
    benchmarks/recommendation.py measures the calibrated pass)."""
    n = ref.shape[-1]
    drops = ref[:, None, :] - cell
    binary = (np.all((ref == 0) | (ref == 1), axis=-1)[:, None] & np.all((cell == 0) | (cell == 1), axis=-1))
    lost = np.sum(drops == 1, axis=-1).astype(float)
    gained = np.sum(drops == -1, axis=-1).astype(float)
    estimate = np.sum(drops, axis=-1) / n
    se = np.sqrt(n / (n - 1) * np.sum((drops - estimate[..., None]) ** 2, axis=-1)) / n
    flat = ~binary & (se < 1e-12)
    still = flat & (np.abs(estimate) < 1e-12)  # no spread and no drop: the score test of no flips
    score = binary | still
    lost, gained = np.where(still, 0.0, lost), np.where(still, 0.0, gained)
    se = np.where(flat & ~still, 1.0 / n, se)

    def t_cdf(delta: float) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(se > 0, (estimate - delta) / np.where(se > 0, se, 1.0), np.sign(estimate - delta) * np.inf)
        return student_t.cdf(z, n - 1)

    def cdf(delta: float) -> np.ndarray:
        return np.where(score, norm.cdf(tango_z(lost, gained, n, delta)), t_cdf(delta))

    below, above_minus = cdf(margin), 1.0 - cdf(-margin)
    if calibrate:  # the package's own PairedEvidence per t-path comparison (where it keeps the documents)
        for at in zip(*np.nonzero(~score & ~flat)):
            evidence = PairedEvidence(method="t", n=n, estimate=float(estimate[at]), se=float(se[at]), df=n - 1,
                                      drops=tuple(drops[at].tolist()))
            below[at] = evidence.calibrated_p(margin, "below", level)
            above_minus[at] = evidence.calibrated_p(-margin, "above", level)
    return Tests(p_below_margin=below, p_above_minus_margin=above_minus, p_above_margin=1.0 - cdf(margin))


def _task_tests(ref: np.ndarray, cell: np.ndarray, margin: float) -> tuple[np.ndarray, np.ndarray]:
    """(p_above(margin), noninferior) per (T, C), as `decide` computes them (noninferior: the 90% interval's upper
    end below the margin, the one-sided test of "drop >= margin" at 5%)."""
    tests = task_tests(ref, cell, margin)
    return tests.p_above_margin, tests.p_below_margin < 0.05


def holm_adjusted(p: np.ndarray) -> np.ndarray:
    """Holm-adjusted p-values over the last axis, as statsmodels' multipletests computes them."""
    k = p.shape[-1]
    order = np.argsort(p, axis=-1, kind="stable")
    ranked = np.take_along_axis(p, order, axis=-1) * np.arange(k, 0, -1)
    adjusted_sorted = np.minimum(1.0, np.maximum.accumulate(ranked, axis=-1))
    adjusted = np.empty_like(adjusted_sorted)
    np.put_along_axis(adjusted, order, adjusted_sorted, axis=-1)
    return adjusted


def _holm_reject(p: np.ndarray, alpha: float) -> np.ndarray:
    """Holm over the last axis: adjusted < alpha."""
    return holm_adjusted(p) < alpha


def _decide_fast(refs: list[np.ndarray], cells: list[np.ndarray], margin: float,
                 alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """(outcome (T, C), worse (T, C, K)) for every simulated run at once."""
    tests = [_task_tests(r, c, margin) for r, c in zip(refs, cells)]
    p = np.stack([pt for pt, _ in tests], axis=-1)  # (T, C, K)
    noninferior = np.stack([ni for _, ni in tests], axis=-1)
    t, c, k = p.shape
    worse = _holm_reject(p.reshape(t, c * k), alpha).reshape(t, c, k)
    outcome = np.where(worse.any(axis=-1), FAIL, np.where(noninferior.all(axis=-1), PASS, INCONCLUSIVE))
    return outcome, worse


def decide_exact(refs: Sequence[np.ndarray], cells: Sequence[np.ndarray], names: Sequence[str], margin: float,
                 alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """One run decided by the package's functions: refs[k] (n,), cells[k] (C, n). (outcome (C,), worse (C, K))."""
    count = cells[0].shape[0]
    family = {(c, name): (paired_evidence(refs[k], cells[k][c], calibrate=False), margin)
              for c in range(count) for k, name in enumerate(names)}
    decisions = decide_family(family, alpha)
    outcome = np.array([OUTCOME_CODE[gate_outcome([decisions[(c, name)] for name in names])] for c in range(count)])
    worse = np.array([[decisions[(c, name)].outcome == "worse" for name in names] for c in range(count)])
    return outcome, worse


# -------------------------------------------------------------------------------------------------- the simulation

def simulate_run(tasks: Sequence[TaskSpec], *, cells: int, margin: float | Mapping[str, float], alpha: float = 0.05,
                 drops: Mapping[int, float] | None = None, trials: int = 1000, seed: int | Sequence[int] = 0,
                 check: int = 0, exact: bool = False, chunk: int = 250) -> RunResult:
    """`trials` simulated runs of `cells` cells against one shared reference, each cell with every task in `tasks`;
    `drops`: cell index -> true accuracy drop on every task of that cell (the others are unchanged). `margin`: one,
    or per task name. The first `check` runs are decided by the package's own functions as well and compared
    (`RunResult.checked`, `.agreed`); `exact`: decide every run with them (slow: for tests of the replica)."""
    drops = {int(c): float(d) for c, d in (drops or {}).items() if d}
    for c, d in drops.items():
        if not 0 <= c < cells:
            raise ValueError(f"drop for cell {c} of {cells}")
    margins = [float(margin[t.name]) if isinstance(margin, Mapping) else float(margin) for t in tasks]
    if len(set(margins)) > 1:
        raise ValueError("one margin per run: decide_family takes a margin per comparison, the replica one")
    rng = np.random.default_rng(seed)
    outcomes, worses = [], []
    checked = agreed = 0
    done = 0
    while done < trials:
        size = min(chunk, trials - done)
        refs, cell_scores = [], []
        for task in tasks:
            p = task.draw_p(rng, size)
            keep = np.ones(cells)
            for c, d in drops.items():
                if d > task.accuracy:
                    raise ValueError(f"{task.name}: a drop of {d} exceeds the accuracy {task.accuracy}")
                keep[c] = 1 - d / task.accuracy if task.accuracy > 0 else 1.0
            refs.append(rng.binomial(task.reference_repeats, p) / task.reference_repeats)
            cell_p = np.clip(p[:, None, :] * keep[None, :, None], 0.0, 1.0)
            cell_scores.append(rng.binomial(task.cell_repeats, cell_p) / task.cell_repeats)
        if exact:
            rows = [decide_exact([r[i] for r in refs], [c[i] for c in cell_scores], [t.name for t in tasks],
                                 margins[0], alpha) for i in range(size)]
            outcome = np.stack([o for o, _ in rows])
            worse = np.stack([w for _, w in rows])
            checked += size
            agreed += size
        else:
            outcome, worse = _decide_fast(refs, cell_scores, margins[0], alpha)
            for i in range(min(size, check - checked)):
                o, w = decide_exact([r[i] for r in refs], [c[i] for c in cell_scores], [t.name for t in tasks],
                                    margins[0], alpha)
                checked += 1
                agreed += bool(np.array_equal(o, outcome[i]) and np.array_equal(w, worse[i]))
        outcomes.append(outcome)
        worses.append(worse)
        done += size
    return RunResult(tasks=list(tasks), cells=cells, drops=drops, outcome=np.concatenate(outcomes),
                     worse=np.concatenate(worses), checked=checked, agreed=agreed)


def planned_repeats(task: TaskSpec, *, margin: float, alpha: float, power: float, cells: int, tasks: int,
                    under_drop: bool = False) -> tuple[int, int] | None:
    """Repeats for this task's Beta model such that a drop of twice the margin is caught with `power`. Plain:
    sizing.repeats_needed with the null's within-document variance on both sides and normal quantiles (the
    brief's formula); `under_drop`: sizing.repeats_for_task, the variance the test sees at that drop (the cell's
    own within-document variance and the drop's spread between documents) and Student's t at docs - 1."""
    if under_drop:
        return sizing.repeats_for_task(task.accuracy, task.consistency, task.docs, margin, alpha=alpha, power=power,
                                       cells=cells, tasks=tasks)
    within = sizing.within_doc_variance(task.accuracy, task.consistency)
    return sizing.repeats_needed(within, task.docs, margin, alpha=alpha, power=power, cells=cells, tasks=tasks)


# --------------------------------------------------------------------------------------------------------- report

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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000, help="simulated runs per line (default 2000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--regime", choices=("sm120", "demo", "all"), default="all")
    parser.add_argument("--check", type=int, default=10,
                        help="runs per line also decided by the package's own functions (default 10)")
    parser.add_argument("--baseline", default=str(HERE.parent / "baselines" / "cpu-smollm2.json"))
    parser.add_argument("--from-run", metavar="DIR", help="also replay an empirical A/A from a run folder whose "
                        "reference ran repeats (the demo's: reports/cpu-smollm2)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    print("Regime: an A/A null. The reference (or baseline) and every cell are independent draws from the SAME "
          "per-document success probabilities p_i ~ Beta(mean accuracy, intra-class correlation consistency); "
          "a side's score of a document is Binomial(repeats, p_i) / repeats; a cell with a true drop d answers with "
          "p_i (1 - d / accuracy) on every task. Decisions: paired_evidence per (cell, task), decide_family over "
          "every cell x task (Holm), gate_outcome per cell.")
    if args.regime in ("sm120", "all"):
        sm120(args)
    if args.regime in ("demo", "all"):
        demo(args)
    if args.from_run:
        from_run(args)
    time_gate(args.seed)
    print(f"\n{time.perf_counter() - start:.0f} s in all")
    if CHECK_FAILURES:
        print("\nTHE REPLICA DISAGREES WITH THE PACKAGE'S DECISIONS:\n  " + "\n  ".join(CHECK_FAILURES))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
