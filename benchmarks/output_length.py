"""The output-length check's errors (issue 60, 3; evalharness/analysis/outputlength.py) under independent draws of
one engine at the real matrices' sizes.

The rule: per task, the ratio of the cell's mean output tokens per answer to the reference's, paired by document,
with the ratio estimator's delta-method interval on the log scale (t on n - 1 df) at 90%; `within` ±10% when the
interval lies inside [0.9, 1.1], `shorter` / `longer` when it lies wholly outside, else `undecided`. What matters:
- a false alarm: a cell whose answers are truly as long (ratio 1.0) named shorter or longer;
- at the boundary (a true ratio of 0.9): named `shorter` at most alpha (5%), and called `within` at most alpha
  (the error that hides a cell that stops early);
- power: a cell whose answers are truly 0.8x / 0.7x as long named `shorter`; a cell truly unchanged called `within`.

Model: each document's reference length is log-normal around 150 tokens (`spread` the SD of its log: 0.8, or 1.2
for heavy tails); each answer draws log-normal noise of SD `noise` around its document's length (0 for a greedy
engine; 0.3 for sampling); the cell's answers scale by the true ratio, either evenly (`scale`) or by a cap on each
answer's length set so that the mean falls to the ratio (`cap`: the shape of a cell that stops early); a greedy
cell of other numerics (the demo's bfloat16) differs per document by log-normal SD `cell_noise`. R answers a
document a side. 4,000 runs a line (+-0.35 point at 5%).

    .venv/bin/python benchmarks/output_length.py [--trials 4000] [--seed 1]
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
from scipy import stats

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

from evalharness.analysis.outputlength import TOLERANCE, length_ratio  # noqa: E402

ALPHA = 0.05


@dataclass(frozen=True)
class Regime:
    name: str
    documents: int
    repeats: int  # answers a document, each side
    noise: float  # SD of an answer's log-length around its document's (0: greedy)
    spread: float = 0.8  # SD of the documents' log-lengths
    cell_noise: float = 0.0  # SD of a greedy cell's per-document log-factor (other numerics)


REGIMES = (
    Regime("demo: 60 documents, greedy, a cell of other numerics", 60, 1, 0.0, cell_noise=0.3),
    Regime("demo, heavy-tailed lengths", 60, 1, 0.0, spread=1.2, cell_noise=0.3),
    Regime("sm120 exploration: 24 documents, 1 sampled answer", 24, 1, 0.3),
    Regime("sm120 confirmation: 150 documents, 11 sampled answers", 150, 11, 0.3),
    Regime("sm120 confirmation, heavy-tailed lengths", 150, 11, 0.3, spread=1.2),
)


def _cap_for(lengths: np.ndarray, ratio: float) -> float:
    """The cap on every answer that lowers the mean length to `ratio` of its own (bisection on the pooled draws)."""
    target, low, high = ratio * lengths.mean(), 0.0, float(lengths.max())
    for _ in range(60):
        mid = (low + high) / 2
        if np.minimum(lengths, mid).mean() > target:
            high = mid
        else:
            low = mid
    return (low + high) / 2


def draw(regime: Regime, ratio: float, shape: str, rng: np.random.Generator, trials: int) -> tuple[np.ndarray, ...]:
    """(reference, cell) per-document mean lengths, (trials, documents)."""
    n, r = regime.documents, regime.repeats
    base = 150.0 * np.exp(rng.normal(0, regime.spread, (trials, n, 1)))
    ref = base * np.exp(rng.normal(0, regime.noise, (trials, n, r)))
    # a greedy cell of other numerics: each document's length moved by a mean-one log-normal factor
    own = base * np.exp(rng.normal(-regime.cell_noise ** 2 / 2, regime.cell_noise, (trials, n, 1))
                        if regime.cell_noise else 0.0)
    own = own * np.exp(rng.normal(0, regime.noise, (trials, n, r)))
    if shape == "scale" or ratio == 1.0:
        cell = own * ratio
    else:  # capped: what the truth means here is the mean over many draws of this regime
        cell = np.minimum(own, _cap_for(own.ravel(), ratio))
    return ref.mean(axis=2), np.maximum(1.0, np.round(cell)).mean(axis=2)


def rates(regime: Regime, ratio: float, shape: str, trials: int, seed: int, check: int = 20) -> dict:
    rng = np.random.default_rng([seed, regime.documents, regime.repeats, int(ratio * 100), len(shape)])
    ref, cell = draw(regime, ratio, shape, rng, trials)
    n = regime.documents
    mean_r, mean_c = ref.mean(axis=1), cell.mean(axis=1)
    est = mean_c / mean_r
    se = np.sqrt(((cell - est[:, None] * ref) ** 2).sum(axis=1) / (n * (n - 1))) / mean_r
    half = stats.t.ppf(1 - ALPHA, n - 1) * se / est  # the log scale, as the package
    low, high = est * np.exp(-half), est * np.exp(half)
    shorter, longer = high < 1 - TOLERANCE, low > 1 + TOLERANCE
    within = (low > 1 - TOLERANCE) & (high < 1 + TOLERANCE)
    for i in range(min(check, trials)):  # the replica agrees with the package's rule
        docs = [f"d{j}" for j in range(n)]
        got = length_ratio("t", dict(zip(docs, ref[i])), dict(zip(docs, cell[i])))
        want = "shorter" if shorter[i] else "longer" if longer[i] else "within" if within[i] else "undecided"
        if got.outcome != want:
            raise SystemExit(f"replica disagrees with the package: {got.outcome} != {want} ({regime.name})")
    return {"shorter": shorter.mean(), "longer": longer.mean(), "within": within.mean()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    began = time.time()
    print(f"{args.trials} runs a line; tolerance ±{TOLERANCE:.0%}, alpha {ALPHA} (90% interval)")
    print("| regime | 1.0: named (shorter+longer) / within | 0.9 scaled: shorter / within | 0.9 capped: shorter / "
          "within | 0.8: shorter (scaled / capped) | 0.7: shorter (capped) |")
    print("|---|---|---|---|---|---|")
    for regime in REGIMES:
        same = rates(regime, 1.0, "scale", args.trials, args.seed)
        edge = rates(regime, 0.9, "scale", args.trials, args.seed)
        edge_cap = rates(regime, 0.9, "cap", args.trials, args.seed)
        far = rates(regime, 0.8, "scale", args.trials, args.seed)
        far_cap = rates(regime, 0.8, "cap", args.trials, args.seed)
        farther = rates(regime, 0.7, "cap", args.trials, args.seed)
        print(f"| {regime.name} | {100 * (same['shorter'] + same['longer']):.2f}% / {100 * same['within']:.1f}% | "
              f"{100 * edge['shorter']:.2f}% / {100 * edge['within']:.2f}% | {100 * edge_cap['shorter']:.2f}% / "
              f"{100 * edge_cap['within']:.2f}% | {100 * far['shorter']:.1f}% / {100 * far_cap['shorter']:.1f}% | "
              f"{100 * farther['shorter']:.1f}% |", flush=True)
    print(f"\n{time.time() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
