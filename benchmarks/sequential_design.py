"""A fixed design against sequential stopping with screening (analysis/sequential.py): generated tokens, false
alarms, power, and what is left inconclusive, on the same simulated runs.

The model is benchmarks/gate_false_alarms.py's: per task and simulated run, each document's success probability
p_i ~ Beta(mean accuracy, intra-class correlation `consistency`) (or p_i given: `--from-run`); a side's score of a
document is Binomial(repeats, p_i) / repeats; a cell with a true drop d answers with p_i (1 - d / accuracy); a
broken cell (stated model) answers with p_i x `--broken-factor` (0.3: a damaged model, about a 0.6 drop).

The two designs, on the SAME draws (a cell's repeats are nested: look k's data is the first looks[k] repeats of the
draws the fixed design uses in full, so the designs differ only by their rule):

- fixed: every cell runs all its repeats Rc of every task, the reference Rr (`sizing.repeats_for_task`, cells x
  tasks of the matrix); `decide_family` over every cell x task at alpha;
- sequential + screening: the reference runs all Rr; a cell's task runs in looks `default_looks(Rc)`, and after
  each look `decide_look(evidence so far, margin, look_levels(alpha, looks)[k], family_size=cells x tasks)`; the task
  stops at the first stop ("equivalent" or "worse"); a cell that is not faster than the reference (`screened(verdict,
  full_quality=False)`; here a stated half of the cells) runs only the first look of every task: its first repeat,
  or, for a task it runs once, `--screen-documents` (quality.screen_documents, 0.25) of its documents, judged as a
  fixed design of those documents at the full alpha. The final analysis
  is `decide_family` over every comparison with `alphas[(cell, task)] = final_alpha(alpha, looks, repeats reached)`.

Every run is decided by a numpy replica of those functions (the t-test over documents, the continuity-corrected
score test where both sides are 0/1, Holm's step-down; score-test intervals come from the package's own
`PairedEvidence`, cached). The first `--check` runs of every scenario are also decided by the package's own
functions, look by look; the script says how many agreed and exits 1 if any did not.

Tokens: documents x repeats x tokens per answer (stated assumptions, reasoning chains), summed over the cells and
the reference. Rates carry one standard error over runs (+-); design differences are paired (same draws).

    .venv/bin/python benchmarks/sequential_design.py [--trials 4000] [--null-trials 4000]
        [--boundary-trials 2000] [--from-run DIR] [--cells 24 --slow-share 0.5 ...] (--help)
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
from scipy.stats import norm, t as student_t

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

from evalharness.analysis import sizing  # noqa: E402
from evalharness.analysis.equivalence import cell_outcome, decide_family  # noqa: E402
from evalharness.analysis.sequential import (decide_look, default_looks, final_alpha, look_levels,  # noqa: E402
                                             screened)
from evalharness.analysis.stats import PairedEvidence, paired_evidence, tango_z  # noqa: E402
from evalharness.matrix.quality import QualitySection  # noqa: E402

# a screened cell's share of the documents of a task it runs once (quality.screen_documents; the matrix's default)
SCREEN_DOCUMENTS = QualitySection.model_fields["screen_documents"].default

EQUIVALENT, INCONCLUSIVE, WORSE = 0, 1, 2
CODE = {"equivalent": EQUIVALENT, "inconclusive": INCONCLUSIVE, "worse": WORSE}
UNCHANGED, BROKEN, DROPPED = "unchanged", "broken", "dropped"

# the sm120 matrix's sizes, with stated tokens per answer (assumptions: reasoning chains)
SM120 = "gsm8k:200:0.95:1500,gpqa_diamond:198:0.80:8000,mmlu_pro:210:0.82:4000,ifeval:200:0.88:1200"


@dataclass(frozen=True)
class Task:
    """One task: `docs` documents at `accuracy` with `consistency` (the Beta model), or fixed per-document
    probabilities `p`; tokens per answer; the fixed design's repeats (cell, reference)."""

    name: str
    docs: int
    accuracy: float
    consistency: float
    tokens: float
    cell_repeats: int
    reference_repeats: int
    p: np.ndarray | None = field(default=None, compare=False)

    @property
    def looks(self) -> list[int]:
        return default_looks(self.cell_repeats)

    def screened_docs(self, share: float) -> int | None:
        """The documents a screened cell answers of this task: a share of them when the task runs once (its first
        look is then a batch of documents, _lmeval_worker.document_subsets), else None (its first repeat)."""
        return max(1, math.ceil(self.docs * share)) if self.cell_repeats == 1 and share < 1 else None

    def draw_p(self, rng: np.random.Generator, trials: int) -> np.ndarray:
        if self.p is not None:
            return np.broadcast_to(self.p, (trials, self.docs))
        mu, rho = self.accuracy, self.consistency
        if mu <= 0 or mu >= 1 or rho <= 0:
            return np.full((trials, self.docs), float(mu))
        if rho >= 1:
            return (rng.random((trials, self.docs)) < mu).astype(float)
        scale = 1 / rho - 1
        return rng.beta(mu * scale, (1 - mu) * scale, size=(trials, self.docs))


@dataclass(frozen=True)
class Mix:
    """What each cell is (unchanged, broken or dropped) and whether it is faster than the reference."""

    kinds: tuple[str, ...]
    fast: tuple[bool, ...]

    @classmethod
    def of(cls, cells: int, broken_share: float, dropped_share: float, slow_share: float) -> Mix:
        broken, dropped = round(cells * broken_share), round(cells * dropped_share)
        if broken + dropped > cells:
            raise ValueError("broken and dropped shares exceed the cells")
        kinds = [UNCHANGED] * (cells - broken - dropped) + [BROKEN] * broken + [DROPPED] * dropped
        fast = []
        for kind in (UNCHANGED, BROKEN, DROPPED):  # slow cells spread evenly within each kind (Bresenham)
            for j in range(kinds.count(kind)):
                fast.append(not math.floor((j + 1) * slow_share) > math.floor(j * slow_share))
        return cls(tuple(kinds), tuple(fast))

    @property
    def cells(self) -> int:
        return len(self.kinds)

    def mask(self, kind: str, fast: bool | None = None) -> np.ndarray:
        m = np.array([k == kind for k in self.kinds])
        if fast is not None:
            m &= np.array(self.fast) == fast
        return m

    def describe(self) -> str:
        parts = []
        for kind in (UNCHANGED, BROKEN, DROPPED):
            n = self.kinds.count(kind)
            f = sum(1 for k, s in zip(self.kinds, self.fast) if k == kind and s)
            if n:
                parts.append(f"{n} {kind} ({f} fast, {n - f} slow)")
        return ", ".join(parts)


def verdict_of(fast: bool) -> bool:
    """Whether the speed rule calls a simulated cell credibly not faster (SpeedVerdict.not_faster): a fast cell is
    not, a slow one is."""
    return not fast


# ----------------------------------------------------------------------------------------------------- the replica



@dataclass
class Evidence:
    """paired_evidence(reference, cell) for every (trial, cell) at once."""

    n: int
    score: np.ndarray  # the score test (both sides 0/1, or no spread and no drop); else the t-test
    lost: np.ndarray
    gained: np.ndarray
    estimate: np.ndarray
    se: np.ndarray

    @classmethod
    def of(cls, ref: np.ndarray, cell: np.ndarray) -> Evidence:
        """ref (T, n), cell (T, C, n)."""
        n = ref.shape[-1]
        drops = ref[:, None, :] - cell
        binary = np.all((ref == 0) | (ref == 1), axis=-1)[:, None] & np.all((cell == 0) | (cell == 1), axis=-1)
        estimate = np.sum(drops, axis=-1) / n
        se = np.sqrt(n / (n - 1) * np.sum((drops - estimate[..., None]) ** 2, axis=-1)) / n
        lost = np.where(binary, np.sum(drops == 1, axis=-1), 0).astype(float)
        gained = np.where(binary, np.sum(drops == -1, axis=-1), 0).astype(float)
        flat = ~binary & (se < 1e-12)
        still = flat & (np.abs(estimate) < 1e-12)
        se = np.where(flat & ~still, 1.0 / n, se)
        return cls(n, binary | still, lost, gained, estimate, se)

    def p_above(self, margin: float) -> np.ndarray:
        z_score = tango_z(self.lost, self.gained, self.n, margin)
        with np.errstate(divide="ignore", invalid="ignore"):
            z_t = np.where(self.se > 0, (self.estimate - margin) / np.where(self.se > 0, self.se, 1.0),
                           np.sign(self.estimate - margin) * np.inf)
        return np.where(self.score, 1.0 - norm.cdf(z_score), 1.0 - student_t.cdf(z_t, self.n - 1))

    def equivalent(self, margin: float, level: float | np.ndarray) -> np.ndarray:
        """interval(1 - 2 level) inside (-margin, margin), elementwise level."""
        level = np.broadcast_to(np.asarray(level, dtype=float), self.estimate.shape)
        confidence = 1 - 2 * level
        q = student_t.ppf((1 + confidence) / 2, self.n - 1)
        with np.errstate(invalid="ignore"):
            low, high = self.estimate - q * self.se, self.estimate + q * self.se
        out = (-margin < low) & (high < margin)
        if np.any(self.score):
            idx = np.nonzero(self.score)
            for i in zip(*idx):
                lo, hi = _score_interval(self.n, int(self.lost[i]), int(self.gained[i]), float(confidence[i]))
                out[i] = -margin < lo and hi < margin
        return out


@functools.lru_cache(maxsize=None)
def _score_interval(n: int, lost: int, gained: int, confidence: float) -> tuple[float, float]:
    """The package's own score-test interval (it depends only on the flips and n)."""
    return PairedEvidence(method="score", n=n, estimate=(lost - gained) / n, lost=lost,
                          gained=gained).interval(confidence)


def holm_adjusted(p: np.ndarray) -> np.ndarray:
    """stats.holm over the last axis."""
    m = p.shape[-1]
    order = np.argsort(p, axis=-1)
    ranked = np.take_along_axis(p, order, axis=-1) * (m - np.arange(m))
    stepped = np.minimum(1.0, np.maximum.accumulate(ranked, axis=-1))
    out = np.empty_like(stepped)
    np.put_along_axis(out, order, stepped, axis=-1)
    return out


# -------------------------------------------------------------------------------------------------- the simulation

@dataclass
class Result:
    """Per (trial, cell, task): both designs' outcomes and the sequential design's repeats reached."""

    tasks: list[Task]
    mix: Mix
    fixed: np.ndarray  # (T, C, K) outcome codes
    seq: np.ndarray
    reached: np.ndarray  # (T, C, K) repeats the sequential design ran
    reached_cell_stop: np.ndarray | None = None  # (T, C, K) had a cell stopped at its first task called worse
    alpha: float = 0.05
    checked: int = 0
    agreed: int = 0
    disagreements: list[str] = field(default_factory=list)

    @property
    def trials(self) -> int:
        return int(self.fixed.shape[0])

    @staticmethod
    def cell_level(outcome: np.ndarray) -> np.ndarray:
        """cell_outcome per (trial, cell): worse if any task is, equivalent if all are, else inconclusive."""
        return np.where(np.any(outcome == WORSE, axis=-1), WORSE,
                        np.where(np.all(outcome == EQUIVALENT, axis=-1), EQUIVALENT, INCONCLUSIVE))

    def fixed_tokens(self) -> float:
        return float(sum(t.docs * t.tokens * (self.mix.cells * t.cell_repeats + t.reference_repeats)
                         for t in self.tasks))

    def seq_tokens(self, cells: np.ndarray | None = None) -> np.ndarray:
        """(T,) tokens of the sequential design: the reference in full plus what each cell reached."""
        per = np.array([t.docs * t.tokens for t in self.tasks])
        ref = sum(t.docs * t.tokens * t.reference_repeats for t in self.tasks)
        reached = self.reached if cells is None else self.reached[:, cells, :]
        return ref + np.sum(reached * per, axis=(1, 2))

    def cell_stop_tokens(self) -> np.ndarray:
        per = np.array([t.docs * t.tokens for t in self.tasks])
        return self.reference_tokens() + np.sum(self.reached_cell_stop * per, axis=(1, 2))

    def reference_tokens(self) -> float:
        return float(sum(t.docs * t.tokens * t.reference_repeats for t in self.tasks))

    def cell_tokens(self, cells: np.ndarray) -> float:
        per = np.array([t.docs * t.tokens for t in self.tasks])
        return float(np.mean(np.sum(self.reached[:, cells, :] * per, axis=(1, 2))))


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
             screen_documents: float = SCREEN_DOCUMENTS) -> Result:
    """`trials` simulated runs of both designs on the same draws. A screened cell answers `screen_documents` of the
    documents of a task it runs once (the first of them: draws are exchangeable, like the seeded order's prefix)."""
    tasks = list(tasks)
    cells, family = mix.cells, mix.cells * len(tasks)
    fast = np.array([not screened(verdict_of(f), False) for f in mix.fast])
    rng = np.random.default_rng(seed)
    fixed_all, seq_all, reached_all, cell_stop_all = [], [], [], []
    result = Result(tasks, mix, np.empty(0), np.empty(0), np.empty(0), alpha=alpha)
    done = 0
    while done < trials:
        size = min(chunk, trials - done)
        refs, looks_data = [], []
        fixed_p, fixed_eq, seq_p, seq_eq, seq_alpha, reached = [], [], [], [], [], []
        task_idx, task_worse, shares = [], [], []
        per_task = []
        for task in tasks:
            looks = task.looks
            levels = look_levels(alpha, looks)
            finals = [final_alpha(alpha, looks, r) for r in looks]
            p = task.draw_p(rng, size)
            ref = rng.binomial(task.reference_repeats, p) / task.reference_repeats
            cell_p = np.clip(p[:, None, :] * _factors(task, mix, drop, broken_factor)[None, :, None], 0.0, 1.0)
            counts, before, data = np.zeros(cell_p.shape), 0, []
            for look in looks:  # nested repeats: each look adds its repeats to the ones before
                counts = counts + rng.binomial(look - before, cell_p)
                before = look
                data.append(counts / look)
            refs.append(ref)
            looks_data.append(data)
            # every look's tests
            evid = [Evidence.of(ref, d) for d in data]
            p_look = [e.p_above(margin) for e in evid]
            eq_look = [e.equivalent(margin, lv) if lv > 0 else np.zeros((size, cells), bool)
                       for e, lv in zip(evid, levels)]
            stop = np.zeros((len(looks), size, cells), bool)
            worse_at = np.zeros((len(looks), size, cells), bool)
            for k, lv in enumerate(levels[:-1]):  # the last look is the final analysis, not a stopping look
                if lv > 0:
                    worse_at[k] = p_look[k] < lv / max(1, family)
                    stop[k] = worse_at[k] | eq_look[k]
            first_stop = np.where(stop.any(axis=0), np.argmax(stop, axis=0), len(looks) - 1)
            # a task finds the cell worse only where its first stop is a worse (an equivalent stop ends it first)
            stopped_worse = np.take_along_axis(worse_at, first_stop[None], axis=0)[0]
            first_worse = np.where(stopped_worse, first_stop, len(looks))
            # a screened cell's evidence: its first look, which for a task it runs once is a batch of documents
            sub = task.screened_docs(screen_documents)
            sub_evid = evid[0] if sub is None else Evidence.of(ref[:, :sub], data[0][..., :sub])
            screen = (sub_evid.p_above(margin), sub_evid.equivalent(margin, alpha),
                      1.0 if sub is None else sub / task.docs)
            per_task.append((task, looks, finals, p_look, eq_look, evid, first_stop, first_worse, screen))
        # a cell is worse once any task is: its other tasks stop at the look (round) that found it
        cell_worse_round = np.min(np.stack([np.asarray(t[1])[np.minimum(t[7], len(t[1]) - 1)] * (t[7] < len(t[1]))
                                            + (t[7] >= len(t[1])) * 10**9 for t in per_task], axis=-1), axis=-1)
        for task, looks, finals, p_look, eq_look, evid, first_stop, first_worse, screen in per_task:
            looks_arr = np.asarray(looks)
            # the look each task ends at: its first stop, the cell's worse round, or the last look
            cut = np.searchsorted(looks_arr, np.minimum(cell_worse_round, looks_arr[-1]))
            idx = np.where(fast[None, :], np.minimum(first_stop, cut), 0)
            pick = lambda arrays: np.take_along_axis(np.stack(arrays), idx[None], axis=0)[0]  # noqa: E731
            seq_p.append(np.where(fast[None, :], pick(p_look), screen[0]))
            # decide()'s interval at final_alpha = the look's level: the same test; a screened cell is a fixed
            # design of its first look, at the full alpha
            seq_eq.append(np.where(fast[None, :], pick(eq_look), screen[1]))
            seq_alpha.append(np.where(fast[None, :], np.asarray(finals)[idx], alpha))
            reached.append(np.where(fast[None, :], looks_arr[idx], screen[2]))  # repeats, or a share of one
            shares.append(np.where(fast, 1.0, screen[2]))
            task_idx.append(idx)
            task_worse.append(np.where(fast[None, :], first_worse, len(looks)))
            fixed_p.append(p_look[-1])
            fixed_eq.append(evid[-1].equivalent(margin, alpha))
        outcome = {}
        for name, ps, eqs, alphas in (("fixed", fixed_p, fixed_eq, None), ("seq", seq_p, seq_eq, seq_alpha)):
            p = np.stack(ps, axis=-1).reshape(size, family)
            level = alpha if alphas is None else np.stack(alphas, axis=-1).reshape(size, family)
            worse = (holm_adjusted(p) < level).reshape(size, cells, len(tasks))
            outcome[name] = np.where(worse, WORSE, np.where(np.stack(eqs, axis=-1), EQUIVALENT, INCONCLUSIVE))
        reached_arr = np.stack(reached, axis=-1)
        # tokens only: a cell stopping all its tasks at the look round where its first task is called worse
        first_worse = np.min(np.stack(task_worse, axis=-1), axis=-1)
        cell_stop_all.append(np.stack([np.asarray(t.looks)[np.minimum(task_idx[k], first_worse)] * shares[k][None, :]
                                       for k, t in enumerate(tasks)], axis=-1))
        for i in range(min(size, check - result.checked)):
            _check(result, tasks, mix, refs, looks_data, i, margin, alpha, outcome["fixed"][i], outcome["seq"][i],
                   reached_arr[i], done + i, screen_documents)
        fixed_all.append(outcome["fixed"])
        seq_all.append(outcome["seq"])
        reached_all.append(reached_arr)
        done += size
    result.fixed, result.seq = np.concatenate(fixed_all), np.concatenate(seq_all)
    result.reached = np.concatenate(reached_all)
    result.reached_cell_stop = np.concatenate(cell_stop_all)
    return result


def decide_with_package(tasks: Sequence[Task], mix: Mix, refs: Sequence[np.ndarray],
                        looks_data: Sequence[Sequence[np.ndarray]], margin: float, alpha: float,
                        screen_documents: float = SCREEN_DOCUMENTS) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                                             list, list]:
    """One run decided by the package's own functions, look by look. refs[k] (n,); looks_data[k][j] (C, n).
    (fixed outcomes (C, K), sequential outcomes (C, K), repeats reached (C, K), cell outcomes fixed, sequential)."""
    cells, family = mix.cells, mix.cells * len(tasks)
    fixed_family, seq_family, alphas = {}, {}, {}
    reached = np.zeros((cells, len(tasks)))
    for c in range(cells):
        runs_all = not screened(verdict_of(mix.fast[c]), full_quality=False)
        # as the quality phase does it, repeat by repeat: a task looks at its own looks and stops when settled;
        # once one is worse, every other task of the cell stops at its next look; a screened cell is a fixed
        # design of its first look
        plans = {k: list(t.looks if runs_all else t.looks[:1]) for k, t in enumerate(tasks)}
        end = {k: v[-1] for k, v in plans.items()}
        chosen: dict[int, tuple] = {}
        for done in sorted({r for v in plans.values() for r in v}):
            found_worse = False
            for k, task in enumerate(tasks):
                if done not in plans[k] or done > end[k]:
                    continue
                # a screened cell of a task it runs once answers the first documents of the seeded order
                kept = None if runs_all else task.screened_docs(screen_documents)
                evidence = paired_evidence(refs[k][:kept], looks_data[k][plans[k].index(done)][c][:kept])
                chosen[k] = (evidence, done, 1.0 if kept is None else kept / task.docs)
                if done == end[k]:
                    continue
                stop = decide_look(evidence, margin, look_levels(alpha, plans[k])[plans[k].index(done)],
                                   family_size=family).stop
                if stop is not None:
                    end[k] = done
                    found_worse |= stop == "worse"
            if found_worse:
                for k in plans:
                    if end[k] > done:
                        end[k] = next(r for r in plans[k] if r >= done)
        for k, task in enumerate(tasks):
            evidence, look, share = chosen[k]
            fixed_family[(c, task.name)] = (paired_evidence(refs[k], looks_data[k][-1][c]), margin)
            reached[c, k] = look * share
            seq_family[(c, task.name)] = (evidence, margin)
            alphas[(c, task.name)] = final_alpha(alpha, plans[k], look)
    out = []
    cell_level = []
    for fam, al in ((fixed_family, None), (seq_family, alphas)):
        decisions = decide_family(fam, alpha, al)
        out.append(np.array([[CODE[decisions[(c, t.name)].outcome] for t in tasks] for c in range(cells)]))
        cell_level.append([cell_outcome(decisions[(c, t.name)].outcome for t in tasks) for c in range(cells)])
    return out[0], out[1], reached, cell_level[0], cell_level[1]


def _check(result: Result, tasks, mix, refs, looks_data, i, margin, alpha, fixed, seq, reached, run,
           screen_documents: float) -> None:
    f, s, r, cf, cs = decide_with_package(tasks, mix, [x[i] for x in refs], [[d[i] for d in x] for x in looks_data],
                                          margin, alpha, screen_documents)
    result.checked += 1
    same = (np.array_equal(f, fixed) and np.array_equal(s, seq) and np.array_equal(r, reached)
            and [CODE[o] for o in cf] == Result.cell_level(fixed[None])[0].tolist()
            and [CODE[o] for o in cs] == Result.cell_level(seq[None])[0].tolist())
    result.agreed += same
    if not same:
        result.disagreements.append(f"run {run}: fixed {int(np.sum(f != fixed))}, sequential {int(np.sum(s != seq))}"
                                    f" outcomes, {int(np.sum(r != reached))} repeats reached differ")


# --------------------------------------------------------------------------------------------------------- report

CHECK_FAILURES: list[str] = []


def _seed(seed: int, label: str) -> list[int]:
    return [seed, zlib.crc32(label.encode())]


def _rate(hits: np.ndarray) -> tuple[float, float]:
    """Mean of a (T, ...) 0/1 array and its standard error over runs (cells of a run are not independent)."""
    if hits.size == 0:
        return float("nan"), float("nan")
    per_run = hits.reshape(hits.shape[0], -1).mean(axis=1)
    return float(per_run.mean()), float(per_run.std(ddof=1) / math.sqrt(len(per_run))) if len(per_run) > 1 else 0.0


def _pct(hits: np.ndarray) -> str:
    rate, se = _rate(hits)
    return "n/a" if math.isnan(rate) else f"{rate:6.2%} +-{se:.2%}"


def _diff(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Paired difference of two rates on the same runs (a - b) and its standard error."""
    if a.size == 0:
        return float("nan"), float("nan")
    d = (a.reshape(a.shape[0], -1).mean(axis=1) - b.reshape(b.shape[0], -1).mean(axis=1))
    return float(d.mean()), float(d.std(ddof=1) / math.sqrt(len(d))) if len(d) > 1 else 0.0


def _verdict(ok: bool, what: str) -> str:
    return f"  [{'met' if ok else 'NOT MET'}] {what}"


def _note(result: Result, label: str) -> None:
    if result.checked and result.agreed != result.checked:
        CHECK_FAILURES.append(f"{label}: {result.checked - result.agreed} of {result.checked} runs decided "
                              "differently by the package's functions: " + "; ".join(result.disagreements[:3]))


def _mtok(x: float) -> str:
    return f"{x / 1e6:,.1f}M"


def report_mixed(res: Result) -> dict:
    mix, T = res.mix, res.trials
    fixed_cell, seq_cell = Result.cell_level(res.fixed), Result.cell_level(res.seq)
    fast = np.array(mix.fast)
    fixed_tok, seq_tok = res.fixed_tokens(), res.seq_tokens()
    ratio = seq_tok / fixed_tok
    print(f"  generated tokens per run: fixed {_mtok(fixed_tok)} (the reference {_mtok(res.reference_tokens())}, "
          f"each cell {_mtok((fixed_tok - res.reference_tokens()) / mix.cells)}); sequential + screening "
          f"{_mtok(float(seq_tok.mean()))} (min {_mtok(float(seq_tok.min()))}, max {_mtok(float(seq_tok.max()))}): "
          f"ratio {ratio.mean():.1%} (runs {ratio.min():.1%}-{ratio.max():.1%})")
    parts = []
    for kind in (UNCHANGED, BROKEN, DROPPED):
        for f in (True, False):
            m = mix.mask(kind, f)
            if m.any():
                parts.append(f"{kind} {'fast' if f else 'slow'} {_mtok(res.cell_tokens(m) / m.sum())}")
    print("  sequential tokens per cell by kind: " + ", ".join(parts) + " (reference in full, "
          f"{_mtok(res.reference_tokens())})")
    shares = [("the reference", res.reference_tokens())]
    for kind in (UNCHANGED, BROKEN, DROPPED):
        for f in (True, False):
            m = mix.mask(kind, f)
            if m.any():
                shares.append((f"{kind} {'fast' if f else 'slow'}", res.cell_tokens(m)))
    print("  sequential tokens as shares of the fixed design's: " + ", ".join(f"{n} {v / fixed_tok:.1%}"
                                                                           for n, v in shares))
    reach = []
    for k, t in enumerate(res.tasks):
        m = fast & mix.mask(UNCHANGED)
        dm = fast & mix.mask(DROPPED)
        reach.append(f"{t.name} looks {t.looks}: fast unchanged {res.reached[:, m, k].mean():.1f}, "
                     f"fast dropped {res.reached[:, dm, k].mean():.1f} of {t.cell_repeats}")
    print("  mean repeats reached per task: " + "; ".join(reach))

    rows = []
    unchanged = mix.mask(UNCHANGED)
    for label, out, cell in (("fixed", res.fixed, fixed_cell), ("sequential + screening", res.seq, seq_cell)):
        fa = cell[:, unchanged] == WORSE
        any_fa = np.any(fa, axis=1)[:, None]
        row = dict(
            fa=fa, any_fa=any_fa,
            power_fast=cell[:, fast & mix.mask(DROPPED)] == WORSE,
            power_all=cell[:, mix.mask(DROPPED)] == WORSE,
            power_task_fast=out[:, fast & mix.mask(DROPPED), :] == WORSE,
            eq_fast=cell[:, fast & unchanged] == EQUIVALENT,
            eq_all=cell[:, unchanged] == EQUIVALENT,
            inc_all=out == INCONCLUSIVE,
            inc_fast=out[:, fast, :] == INCONCLUSIVE,
            broken_fast=cell[:, fast & mix.mask(BROKEN)] == WORSE,
            broken_slow=cell[:, ~fast & mix.mask(BROKEN)] == WORSE,
        )
        rows.append(row)
        print(f"\n  {label}:")
        print(f"    false alarms (unchanged cells called worse): per cell {_pct(fa)}; runs with any "
              f"{_pct(any_fa)}")
        print(f"    power (dropped cells called worse): fast cells {_pct(row['power_fast'])}; all cells "
              f"{_pct(row['power_all'])}; each task of a fast dropped cell: "
              + ", ".join(f"{t.name} {np.mean(row['power_task_fast'][:, :, k]):.1%}" for k, t in
                          enumerate(res.tasks)))
        print(f"    unchanged cells called equivalent (every task): fast {_pct(row['eq_fast'])}; all "
              f"{_pct(row['eq_all'])}")
        print(f"    decisions (cell x task) left inconclusive: all cells {_pct(row['inc_all'])}; fast cells "
              f"{_pct(row['inc_fast'])}")
        slow_broken = out[:, ~fast & mix.mask(BROKEN), :] == WORSE
        per_task = ", ".join(f"{t.name} {np.mean(slow_broken[:, :, k]):.0%}" for k, t in enumerate(res.tasks)) \
            if slow_broken.size else "n/a"
        print(f"    broken cells called worse: fast {_pct(row['broken_fast'])}; slow {_pct(row['broken_slow'])} "
              f"(each task of a slow broken cell: {per_task})")
    dm = fast & mix.mask(DROPPED)
    full = np.array([t.cell_repeats for t in res.tasks])[None, None, :]
    last = res.reached[:, dm, :] == full
    seq_w, fix_w = res.seq[:, dm, :] == WORSE, res.fixed[:, dm, :] == WORSE
    if dm.any() and np.any(last) and np.any(~last):
        final = np.mean([look_levels(res.alpha, t.looks)[-1] for t in res.tasks])
        print(f"\n  where the per-task power goes (fast dropped cells' tasks, the same draws): {np.mean(~last):.1%} "
              f"stopped before the last look, called worse {np.mean(seq_w[~last]):.1%} (fixed "
              f"{np.mean(fix_w[~last]):.1%}); {np.mean(last):.1%} ran to the last look, called worse "
              f"{np.mean(seq_w[last]):.1%} at its level ~{final:.4f} (fixed, at alpha: {np.mean(fix_w[last]):.1%})")
    return dict(ratio=float(ratio.mean()), ratio_max=float(ratio.max()), fixed=rows[0], seq=rows[1], trials=T,
                cell_stop_ratio=float(np.mean(res.cell_stop_tokens() / fixed_tok)))


def report_null(res: Result) -> dict:
    fixed_cell, seq_cell = Result.cell_level(res.fixed), Result.cell_level(res.seq)
    ratio = res.seq_tokens() / res.fixed_tokens()
    out = {}
    for label, cell in (("fixed", fixed_cell), ("sequential + screening", seq_cell)):
        fa = cell == WORSE
        out[label] = dict(any=np.any(fa, axis=1)[:, None], cell=fa)
        print(f"  {label}: runs with any cell called worse {_pct(out[label]['any'])} "
              f"({int(np.sum(out[label]['any']))} of {res.trials}); per cell {_pct(fa)}; fast cells called "
              f"equivalent {_pct(cell[:, np.array(res.mix.fast)] == EQUIVALENT)}")
    print(f"  tokens: sequential / fixed {ratio.mean():.1%}")
    out["ratio"] = float(ratio.mean())
    return out


def report_boundary(res: Result) -> dict:
    fast = np.array(res.mix.fast)
    out = {}
    for label, outcome in (("fixed", res.fixed), ("sequential + screening", res.seq)):
        cell = Result.cell_level(outcome)
        out[label] = dict(cell=cell[:, fast] == WORSE, any=np.any(cell == WORSE, axis=1)[:, None])
        print(f"  {label}: fast cells called worse {_pct(out[label]['cell'])}; slow cells "
              f"{_pct(cell[:, ~fast] == WORSE)}; runs with any cell called worse {_pct(out[label]['any'])}; "
              f"fast cells' tasks called equivalent {_pct(outcome[:, fast, :] == EQUIVALENT)}")
    return out


def done_when(mixed: dict, null: dict | None, token_goal: float, points: float) -> list[str]:
    f, s = mixed["fixed"], mixed["seq"]
    lines = [_verdict(mixed["ratio"] <= token_goal, f"sequential + screening uses at most {token_goal:.0%} of the "
                      f"fixed design's generated tokens: {mixed['ratio']:.1%} (mean over runs; highest run "
                      f"{mixed['ratio_max']:.1%})")]
    d, se = _diff(s["fa"], f["fa"])
    fa_f, fa_s = _rate(f["fa"])[0], _rate(s["fa"])[0]
    lines.append(_verdict(abs(d) <= points, f"false-alarm rate per unchanged cell within {points:.0%} of the fixed "
                          f"design's: fixed {fa_f:.2%}, sequential {fa_s:.2%} (difference {d:+.2%} +-{se:.2%})"))
    if null is not None:
        a_f, a_s = _rate(null["fixed"]["any"])[0], _rate(null["sequential + screening"]["any"])[0]
        d2, se2 = _diff(null["sequential + screening"]["any"], null["fixed"]["any"])
        lines.append(_verdict(abs(d2) <= points, f"whole-run false-alarm rate (nothing changed) within "
                              f"{points:.0%}: fixed {a_f:.2%}, sequential {a_s:.2%} (difference {d2:+.2%} "
                              f"+-{se2:.2%})"))
    d, se = _diff(s["power_fast"], f["power_fast"])
    p_f, p_s = _rate(f["power_fast"])[0], _rate(s["power_fast"])[0]
    lines.append(_verdict(abs(d) <= points or d > 0, f"power on the FAST cells (the ones that can be recommended; "
                          f"slow ones are screened by design) within {points:.0%} of the fixed design's: fixed "
                          f"{p_f:.2%}, sequential {p_s:.2%} (difference {d:+.2%} +-{se:.2%})"))
    d, se = _diff(s["power_task_fast"], f["power_task_fast"])
    p_f, p_s = _rate(f["power_task_fast"])[0], _rate(s["power_task_fast"])[0]
    lines.append(f"  [info] each task of a fast dropped cell called worse on its own: fixed {p_f:.2%}, sequential "
                 f"{p_s:.2%} (difference {d:+.2%} +-{se:.2%}): by design, once one task of a cell is worse its other "
                 "tasks stop at their next look (the cell is worse whatever they say), and the last look tests at "
                 "0.044, not 0.05; the decision, the cell's, is the power line above")
    if mixed.get("boundary") is not None:
        b = mixed["boundary"]
        d, se = _diff(b["sequential + screening"]["cell"], b["fixed"]["cell"])
        lines.append(_verdict(abs(d) <= points or d < 0, f"false alarms at the least favourable null (every cell "
                              f"truly worse by exactly the margin; fast cells) within {points:.0%}: fixed "
                              f"{_rate(b['fixed']['cell'])[0]:.2%}, sequential "
                              f"{_rate(b['sequential + screening']['cell'])[0]:.2%} per cell (difference {d:+.2%} "
                              f"+-{se:.2%}); runs with any: fixed {_rate(b['fixed']['any'])[0]:.2%}, sequential "
                              f"{_rate(b['sequential + screening']['any'])[0]:.2%}"))
    d, se = _diff(s["power_all"], f["power_all"])
    lines.append(f"  [info] power on ALL cells, slow ones included: fixed {_rate(f['power_all'])[0]:.2%}, sequential "
                 f"{_rate(s['power_all'])[0]:.2%} (difference {d:+.2%} +-{se:.2%}): a screened cell is a fixed design "
                 "of its first look (one repeat, or a share of the documents of a task it runs once), too few "
                 "samples to call a drop of twice the margin worse; it is "
                 "never recommended, and a broken one is still caught")
    return lines


# ---------------------------------------------------------------------------------------------------------- setup

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
    for t in tasks:
        levels = look_levels(alpha, t.looks)
        print(f"  {t.name}: {t.docs} docs at {t.accuracy:.3f}, consistency {t.consistency:.2f}, {t.tokens:,.0f} "
              f"tokens per answer (assumed); repeats_for_task (cell, reference) ({t.cell_repeats}, "
              f"{t.reference_repeats}); looks {t.looks}, levels " + ", ".join(f"{v:.2g}" for v in levels)
              + f" (sum {sum(levels):.4f})")


def run_regime(tasks: list[Task], mix: Mix, *, margin: float, alpha: float, drop: float, broken_factor: float,
               trials: int, null_trials: int, seed: int, check: int, label: str, token_goal: float,
               points: float, boundary_trials: int = 0, screen_documents: float = SCREEN_DOCUMENTS) -> bool:
    print(f"\n  cell mix: {mix.describe()}; a broken cell answers with p_i x {broken_factor}; a dropped cell with "
          f"p_i (1 - {drop:.3g} / accuracy) (a true drop of {drop:.3g}) on every task; a slow cell is screened "
          f"(screened(verdict, full_quality=False)): its first look, which for a task it runs once is "
          f"{screen_documents:.0%} of the documents (quality.screen_documents); family {mix.cells} x {len(tasks)} = "
          f"{mix.cells * len(tasks)}")
    start = time.perf_counter()
    res = simulate(tasks, mix, margin=margin, alpha=alpha, drop=drop, broken_factor=broken_factor, trials=trials,
                   seed=_seed(seed, f"{label}/mixed"), check=check, screen_documents=screen_documents)
    _note(res, f"{label} mixed")
    print(f"\n  -- mixed cells, {trials} simulated runs ({time.perf_counter() - start:.0f} s)")
    mixed = report_mixed(res)
    print(f"  (checked against the package's decide_look / final_alpha / decide_family: {res.agreed} of "
          f"{res.checked} runs decided alike)")
    null = None
    if null_trials:
        null_mix = Mix(tuple(UNCHANGED for _ in mix.kinds), mix.fast)
        start = time.perf_counter()
        nres = simulate(tasks, null_mix, margin=margin, alpha=alpha, drop=drop, broken_factor=broken_factor,
                        trials=null_trials, seed=_seed(seed, f"{label}/null"), check=check,
                        screen_documents=screen_documents)
        _note(nres, f"{label} null")
        print(f"\n  -- null only: every one of {mix.cells} cells unchanged (the same fast / slow split), "
              f"{null_trials} simulated runs ({time.perf_counter() - start:.0f} s)")
        null = report_null(nres)
        print(f"  (checked against the package: {nres.agreed} of {nres.checked} runs decided alike)")
    if boundary_trials:
        edge = Mix(tuple(DROPPED for _ in mix.kinds), mix.fast)
        start = time.perf_counter()
        bres = simulate(tasks, edge, margin=margin, alpha=alpha, drop=margin, broken_factor=broken_factor,
                        trials=boundary_trials, seed=_seed(seed, f"{label}/boundary"), check=min(check, 2),
                        screen_documents=screen_documents)
        _note(bres, f"{label} boundary")
        print(f"\n  -- the least favourable null: every one of {mix.cells} cells truly worse by exactly the margin "
              f"({margin:.3g}) on every task (a 'worse' call is an error here), {boundary_trials} simulated runs "
              f"({time.perf_counter() - start:.0f} s)")
        mixed["boundary"] = report_boundary(bres)
        print(f"  (checked against the package: {bres.agreed} of {bres.checked} runs decided alike)")
    print(f"\n  Done-when ({label}):")
    lines = done_when(mixed, null, token_goal, points)
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
    mix = Mix.of(args.cells, args.broken_share, args.dropped_share, args.slow_share)
    run_regime(tasks, mix, margin=margin, alpha=alpha, drop=args.drop_multiple * margin,
               broken_factor=args.broken_factor, trials=args.from_run_trials, null_trials=args.from_run_trials,
               seed=args.seed, check=args.check, label="from run", token_goal=args.token_goal, points=args.points,
               boundary_trials=args.from_run_trials, screen_documents=args.screen_documents)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=4000, help="simulated runs of the mixed cells (default 4000)")
    parser.add_argument("--null-trials", type=int, default=4000, help="simulated runs with every cell unchanged")
    parser.add_argument("--boundary-trials", type=int, default=2000,
                        help="simulated runs with every cell truly worse by exactly the margin")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--check", type=int, default=6, help="runs per scenario also decided by the package")
    parser.add_argument("--tasks", default=SM120, help="name:docs:accuracy:tokens_per_answer,... (default sm120)")
    parser.add_argument("--consistency", type=float, default=0.5)
    parser.add_argument("--margin", type=float, default=0.02)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--cells", type=int, default=24, help="cells besides the reference")
    parser.add_argument("--broken-share", type=float, default=0.25)
    parser.add_argument("--dropped-share", type=float, default=0.25)
    parser.add_argument("--slow-share", type=float, default=0.5, help="share of each kind not faster (screened)")
    parser.add_argument("--cell-repeats", type=int, help="every cell answers every task this many times (a matrix's "
                        "`repeats`; 1: the demo's, where screening answers a share of the documents); default: "
                        "repeats_for_task's")
    parser.add_argument("--screen-documents", type=float, default=SCREEN_DOCUMENTS,
                        help="a screened cell's share of the documents of a task it runs once (quality."
                             f"screen_documents, default {SCREEN_DOCUMENTS}; 1: its whole first repeat)")
    parser.add_argument("--broken-factor", type=float, default=0.3, help="a broken cell's p_i multiplier")
    parser.add_argument("--drop-multiple", type=float, default=2.0, help="a dropped cell's true drop in margins")
    parser.add_argument("--token-goal", type=float, default=0.40)
    parser.add_argument("--points", type=float, default=0.01, help="tolerance of FA and power (default one point)")
    parser.add_argument("--from-run", metavar="DIR", help="also replay a run folder's reference per-document means")
    parser.add_argument("--from-run-trials", type=int, default=300)
    parser.add_argument("--from-run-tokens", type=float, default=1000.0)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    sizes = parse_tasks(args.tasks, args.consistency)
    print(f"=== regime: {args.cells} cells against one shared reference; "
          + ", ".join(f"{n} {d} docs at {a}" for n, d, a, _ in sizes)
          + f" (binary); consistency {args.consistency}; margin {args.margin}, alpha {args.alpha}; repeats per task "
          f"from repeats_for_task(cells={args.cells}, tasks={len(sizes)}); tokens per answer (assumptions, reasoning "
          "chains): " + ", ".join(f"{n} {tok:,.0f}" for n, _, _, tok in sizes))
    print("  model: p_i ~ Beta(accuracy, consistency) per run; a side's per-document score Binomial(R, p_i) / R; "
          "both designs on the same draws (nested repeats)")
    tasks = sized_tasks(sizes, consistency=args.consistency, margin=args.margin, alpha=args.alpha, cells=args.cells,
                        cell_repeats=args.cell_repeats)
    print_tasks(tasks, args.cells, args.alpha)
    mix = Mix.of(args.cells, args.broken_share, args.dropped_share, args.slow_share)
    run_regime(tasks, mix, margin=args.margin, alpha=args.alpha, drop=args.drop_multiple * args.margin,
               broken_factor=args.broken_factor, trials=args.trials, null_trials=args.null_trials, seed=args.seed,
               check=args.check, label="sm120" + (f", cells answer {args.cell_repeats}x" if args.cell_repeats else ""),
               token_goal=args.token_goal, points=args.points,
               boundary_trials=args.boundary_trials, screen_documents=args.screen_documents)
    if args.from_run:
        from_run(args)
    print(f"\n{time.perf_counter() - start:.0f} s in all")
    if CHECK_FAILURES:
        print("\nTHE REPLICA DISAGREES WITH THE PACKAGE'S DECISIONS:\n  " + "\n  ".join(CHECK_FAILURES))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
