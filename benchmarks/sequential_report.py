"""The printed report of benchmarks/sequential_design.py: rates with their standard errors over runs, paired
differences, and each scenario's table (the mixed cells, the null, the least favourable null, near the margin).
Also the seeds of the scenarios and the list of runs the package decided differently (`CHECK_FAILURES`).
"""

from __future__ import annotations

import math
import zlib
from typing import Sequence

import numpy as np

from benchmarks.sequential_designs import Design, Result
from benchmarks.sequential_model import BROKEN, DROPPED, EQUIVALENT, INCONCLUSIVE, UNCHANGED, WORSE, Task

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


def per_task_power(res: Result, name: str) -> np.ndarray:
    """(K,) each task of a fast dropped cell called worse on its own, by task (the per-task power)."""
    dm = np.array(res.mix.fast) & res.mix.mask(DROPPED)
    return np.mean(res.outcomes[name][:, dm, :] == WORSE, axis=(0, 1))


def _repeats(design: Design, tasks: Sequence[Task]) -> str:
    reps = design.max_repeats(tasks)
    total = sum(t.docs * t.tokens * r for t, r in zip(tasks, reps))
    base = sum(t.docs * t.tokens * t.cell_repeats for t in tasks)
    return "/".join(str(r) for r in reps) + f" (x{total / base:.2f})"


def report_mixed(res: Result, label: str = "") -> dict:
    """Every design's tokens, per-task and cell power, false alarms and what it leaves open, on the same draws.
    Returns rows by design name, and the first two designs' as 'fixed' and 'seq' (with 'ratio', the second's)."""
    mix, T, tasks = res.mix, res.trials, res.tasks
    fast = np.array(mix.fast)
    unchanged, dm = mix.mask(UNCHANGED), fast & mix.mask(DROPPED)
    fixed_tok = res.fixed_tokens()
    print(f"  generated tokens per run of the fixed design {_mtok(fixed_tok)} (the reference "
          f"{_mtok(res.reference_tokens())}, each cell {_mtok((fixed_tok - res.reference_tokens()) / mix.cells)})")
    rows = {}
    names = [d.name for d in res.designs]
    width = max(len(n) for n in names) + 2
    first = res.designs[0].name
    print(f"\n  {'design':{width}}max repeats (x fixed)    tokens, % of fixed (runs)  per-task power, fast dropped "
          f"cells ({', '.join(t.name for t in tasks)}); mean, vs {first}")
    for d in res.designs:
        tok = res.tokens(d.name)
        ratio = tok / fixed_tok
        out, cell = res.outcomes[d.name], Result.cell_level(res.outcomes[d.name])
        fa = cell[:, unchanged] == WORSE
        row = dict(
            name=d.name, design=d, ratio=float(ratio.mean()), ratio_runs=ratio[:, None], ratio_min=float(ratio.min()),
            ratio_max=float(ratio.max()), tokens=float(tok.mean()), repeats=d.max_repeats(tasks),
            repeats_text=_repeats(d, tasks),
            fa=fa, any_fa=np.any(fa, axis=1)[:, None],
            power_fast=cell[:, dm] == WORSE,
            power_all=cell[:, mix.mask(DROPPED)] == WORSE,
            power_task_fast=out[:, dm, :] == WORSE,
            power_by_task=per_task_power(res, d.name) if dm.any() else np.full(len(tasks), np.nan),
            eq_fast=cell[:, fast & unchanged] == EQUIVALENT,
            eq_all=cell[:, unchanged] == EQUIVALENT,
            inc_all=out == INCONCLUSIVE,
            inc_fast=out[:, fast, :] == INCONCLUSIVE,
            broken_fast=cell[:, fast & mix.mask(BROKEN)] == WORSE,
            broken_slow=cell[:, ~fast & mix.mask(BROKEN)] == WORSE,
            unchanged_fast_tokens=np.sum(res.reached_by[d.name][:, fast & unchanged, :] * res._per(), axis=(1, 2)),
            unchanged_fast_cells=int(np.sum(fast & unchanged)),
        )
        rows[d.name] = row
        p, _ = _rate(row["power_task_fast"])
        diff = ""
        if d.name != first and dm.any():
            dd, se = _diff(row["power_task_fast"], rows[first]["power_task_fast"])
            diff = f", {dd * 100:+.1f} +-{se * 100:.1f} points"
        by_task = " ".join(f"{x:.1%}" for x in row["power_by_task"])
        print(f"  {d.name:{width}}{_repeats(d, tasks):25}{row['ratio']:6.1%} ({row['ratio_min']:.1%}-"
              f"{row['ratio_max']:.1%})  {by_task}; {p:.1%}{diff}")
    print(f"\n  {'design':{width}}cell power: fast; all  unchanged called worse: per cell; runs with any  unchanged "
          "called equivalent: fast; all  inconclusive: all; fast  broken called worse: fast; slow")
    for name, row in rows.items():
        def r(key: str, spec: str = "7.2%") -> str:
            v = _rate(row[key])[0]
            return f"{'n/a':>{spec.split('.')[0]}}" if math.isnan(v) else format(v, spec)
        print(f"  {name:{width}}{r('power_fast')}; {r('power_all')}  {r('fa')}; {r('any_fa')}{'':22}{r('eq_fast')}; "
              f"{r('eq_all')}{'':10}{r('inc_all', '6.2%')}; {r('inc_fast', '6.2%')}  {r('broken_fast', '.0%')}; "
              f"{r('broken_slow', '.0%')}")
    print("\n  tokens as shares of the fixed design's, by kind of cell (the reference "
          f"{res.reference_tokens() / fixed_tok:.1%} in every design):")
    for d in res.designs[1:]:
        parts = []
        for kind in (UNCHANGED, BROKEN, DROPPED):
            for f in (True, False):
                m = mix.mask(kind, f)
                if m.any():
                    parts.append(f"{kind} {'fast' if f else 'slow'} {res.cell_tokens(m, d.name) / fixed_tok:.1%}")
        reach = ", ".join(f"{t.name} {res.reached_by[d.name][:, fast & unchanged, k].mean():.1f}"
                          for k, t in enumerate(tasks)) if (fast & unchanged).any() else "n/a"
        print(f"    {d.name}: " + ", ".join(parts) + f"; mean repeats reached by a fast unchanged cell: {reach}")
    second = rows[names[1]] if len(names) > 1 else rows[first]
    return dict(designs=rows, fixed=rows[first], seq=second, ratio=second["ratio"], ratio_max=second["ratio_max"],
                trials=T, label=label)


def report_null(res: Result) -> dict:
    out = {}
    fast = np.array(res.mix.fast)
    for d in res.designs:
        cell = Result.cell_level(res.outcomes[d.name])
        fa = cell == WORSE
        ratio = res.tokens(d.name) / res.fixed_tokens()
        out[d.name] = dict(any=np.any(fa, axis=1)[:, None], cell=fa, ratio=float(ratio.mean()))
        print(f"  {d.name}: runs with any cell called worse {_pct(out[d.name]['any'])} "
              f"({int(np.sum(out[d.name]['any']))} of {res.trials}); per cell {_pct(fa)}; fast cells called "
              f"equivalent {_pct(cell[:, fast] == EQUIVALENT)}; tokens {ratio.mean():.1%} of the fixed design's")
    return out


def report_boundary(res: Result) -> dict:
    fast = np.array(res.mix.fast)
    out = {}
    for d in res.designs:
        outcome = res.outcomes[d.name]
        cell = Result.cell_level(outcome)
        out[d.name] = dict(cell=cell[:, fast] == WORSE, any=np.any(cell == WORSE, axis=1)[:, None],
                           equivalent=outcome[:, fast, :] == EQUIVALENT)
        print(f"  {d.name}: fast cells called worse {_pct(out[d.name]['cell'])}; slow cells "
              f"{_pct(cell[:, ~fast] == WORSE)}; runs with any cell called worse {_pct(out[d.name]['any'])}; "
              f"fast cells' tasks called equivalent {_pct(outcome[:, fast, :] == EQUIVALENT)}")
    return out


def report_near(res: Result) -> dict:
    """Every cell truly worse by half the margin: how often each task of a fast cell is called equivalent (the
    equivalence test's power where it matters: a cell a little worse that should still ship)."""
    fast = np.array(res.mix.fast)
    out = {}
    for d in res.designs:
        outcome = res.outcomes[d.name][:, fast, :] == EQUIVALENT
        out[d.name] = dict(by_task=[outcome[:, :, k] for k in range(len(res.tasks))])
        tokens = res.tokens(d.name) / res.fixed_tokens()
        print(f"  {d.name}: fast cells' tasks called equivalent " + ", ".join(
            f"{t.name} {_pct(outcome[:, :, k])}" for k, t in enumerate(res.tasks))
            + f"; tokens {tokens.mean():.1%} of the fixed design's")
    return out
