"""How often does the batch-dependence flag (measures/batching/compare.py) flag a cell that changes with
batching no more than the reference, and how often does it catch one that changes more?

The null: the reference and the cell are independent draws of one engine. Each prompt has a probability q_i that its
greedy answer changes when batched (Beta with mean m and consistency rho: rho = 1 means a prompt either always or
never changes, the deterministic engine this phase measures; rho = 0.5 a flakier one); both sides draw from the same
q_i. The alternative: the cell's probability is q_i + (1 - q_i) * e, e the extra share of prompts it changes. The rule
is the package's own (measures/batching/compare.py `compare`), called on records this script builds.

Regimes: the phase's default (16 prompts) and 64 prompts, the reference's own rate 0 (vLLM float32 on CPU: 0/16,
2026-12-04), 0.1 and 0.3; the alternative's extra share 0.25 and 0.5 (bfloat16 on the same engine changed 8/16).

    .venv/bin/python benchmarks/batching_flag.py [--trials 2000] [--seed 1]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

from evalharness.measures.batching.compare import compare as batch_change  # noqa: E402
from evalharness.measures.batching.spec import BatchAnswer, BatchDependence  # noqa: E402


def _side(changed: np.ndarray) -> BatchDependence:
    return BatchDependence(concurrency=16, max_tokens=64, answers=[
        BatchAnswer(id=str(i), alone="a", batched="b" if c else "a") for i, c in enumerate(changed)])


def _q(rng: np.random.Generator, n: int, mean: float, rho: float) -> np.ndarray:
    if mean <= 0:
        return np.zeros(n)
    if rho >= 1:
        return (rng.random(n) < mean).astype(float)
    k = 1 / rho - 1
    return rng.beta(mean * k, (1 - mean) * k, size=n)


def flag_rate(n: int, mean: float, rho: float, extra: float, trials: int, rng: np.random.Generator) -> float:
    flagged = 0
    for _ in range(trials):
        q = _q(rng, n, mean, rho)
        ref = rng.random(n) < q
        cell = rng.random(n) < q + (1 - q) * extra
        flagged += batch_change(_side(ref), _side(cell), 0.05).flagged
    return flagged / trials


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"{args.trials} simulated cell pairs per figure, alpha 0.05\n")
    print("| prompts | reference's own rate | consistency | false flag (no change) | caught: +0.25 | caught: +0.5 |")
    print("|---|---|---|---|---|---|")
    for n in (16, 64):
        for mean in (0.0, 0.1, 0.3):
            for rho in ((1.0,) if mean == 0 else (1.0, 0.5)):
                rates = [flag_rate(n, mean, rho, extra, args.trials, rng) for extra in (0.0, 0.25, 0.5)]
                print(f"| {n} | {mean:.1f} | {rho:g} | {rates[0]:.3f} | {rates[1]:.3f} | {rates[2]:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
