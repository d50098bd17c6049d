"""How often does the calls section call a cell's valid-call (or valid-JSON) rate worse when nothing changed, and how
often does it catch a real drop?

The rule is the one every secondary figure is judged by (analysis/secondary.py `secondary_changes`, which the report's
"Calls and structured output" section reads): per (cell, task) each secondary figure's per-case values paired against
the reference's (`paired_evidence`: the score test for 0/1 sides, the t test over cases for means over repeats),
Benjamini-Hochberg over the figures that task has, and "changed" only when the adjusted p is below alpha AND the
change is material (2 points). This script calls the package's own `secondary_changes` on sample files it writes, so
it measures the rule as shipped, nothing replicated.

The null: the reference and the cell are independent draws of one engine. Per case i a validity probability
p_i ~ Beta(mu (1/rho - 1), (1 - mu) (1/rho - 1)) (rho: how consistent a case's answers are across draws; rho = 1 is a
greedy, deterministic engine whose cases are valid or not, rho = 0.5 a sampled one), each side's answers drawn
independently from p_i, R repeats a side. The alternative: the cell answers with p_i (1 - d / mu), its valid rate
lower by d. The other figures of the task (truncated, empty, refused) are drawn under their own null alongside, so
the BH family is the size it is in a run.

Errors that ship a bad cell: a cell whose valid rate really dropped but is not called worse (1 - power). A false
alarm: a cell of the same engine called worse.

Regimes: `demo` (matrices/cpu-calls.yaml: 80 cases a task, 1 repeat, valid rates 0.76 for tools and 0.97 for JSON as
measured on vLLM, 2026-12-04) and `sm120` (200 tool cases, 160 JSON cases, the whole shipped tasks, 1 and 3 repeats).

    .venv/bin/python benchmarks/calls_verdicts.py [--regime demo|sm120|all] [--trials 400] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

from evalharness.analysis.secondary import secondary_changes  # noqa: E402
from evalharness.records.measures import RepeatScore, TaskScore  # noqa: E402

ALPHA = 0.05


def _beta_p(rng: np.random.Generator, n: int, mu: float, rho: float) -> np.ndarray:
    if rho >= 1.0:
        return (rng.random(n) < mu).astype(float)
    k = 1.0 / rho - 1.0
    return rng.beta(mu * k, (1 - mu) * k, size=n)


def _side(folder: Path, name: str, p_valid: np.ndarray, p_trunc: np.ndarray, repeats: int,
          rng: np.random.Generator) -> TaskScore:
    """One side's sample files: per case and repeat, valid and truncated drawn from their probabilities."""
    paths = []
    for repeat in range(repeats):
        valid = rng.random(len(p_valid)) < p_valid
        cut = rng.random(len(p_trunc)) < p_trunc
        rows = [{"task": "t", "doc_id": i, "doc_hash": str(i), "metrics": {"correct": 0.0}, "answer": "x",
                 "finish_reason": "length" if c else "stop", "valid": bool(v), "refused": None}
                for i, (v, c) in enumerate(zip(valid, cut))]
        path = folder / f"{name}-{repeat}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        paths.append(path.name)
    return TaskScore(task="t", samples=paths[0], metric="correct,none",
                     repeats=[RepeatScore(repeat=k, samples=p) for k, p in enumerate(paths[1:], 1)])


def called_worse(folder: Path, n: int, mu: float, rho: float, drop: float, repeats: int,
                 rng: np.random.Generator) -> bool:
    p = _beta_p(rng, n, mu, rho)
    p_cell = p * (1 - drop / mu) if drop else p
    p_trunc = _beta_p(rng, n, 0.2, rho)
    ref = _side(folder, "ref", p, p_trunc, repeats, rng)
    cell = _side(folder, "cell", p_cell, p_trunc, repeats, rng)
    changes = {c.field: c for c in secondary_changes(ref, folder, cell, folder, ALPHA)}
    invalid = changes["invalid_share"]
    return invalid.changed and (invalid.cell or 0) > (invalid.reference or 0)


def run(regime: str, trials: int, seed: int) -> list[str]:
    sizes = {"demo": [("tools", 80, 0.76, 1), ("json", 80, 0.97, 1)],
             "sm120": [("tools", 200, 0.76, 1), ("tools", 200, 0.76, 3), ("json", 160, 0.97, 1)]}[regime]
    lines = [f"## {regime}: {trials} simulated cell pairs per row, alpha {ALPHA}, material at 2 points", "",
             "| task | cases | repeats | valid rate | consistency | false 'worse' (no change) | power at -5 pts | "
             "-10 pts | -20 pts |", "|---|---|---|---|---|---|---|---|---|"]
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for task, n, mu, repeats in sizes:
            for rho in (1.0, 0.5):
                rates = [np.mean([called_worse(folder, n, mu, rho, drop, repeats, rng) for _ in range(trials)])
                         for drop in (0.0, 0.05, 0.10, 0.20)]
                lines.append(f"| {task} | {n} | {repeats} | {mu:.2f} | {rho:g} | {rates[0]:.3f} | "
                             + " | ".join(f"{r:.3f}" for r in rates[1:]) + " |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--regime", choices=["demo", "sm120", "all"], default="all")
    parser.add_argument("--trials", type=int, default=400)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    for regime in (["demo", "sm120"] if args.regime == "all" else [args.regime]):
        print("\n".join(run(regime, args.trials, args.seed)) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
