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
from pathlib import Path
from typing import Sequence

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

# The benchmark lives in these modules; everything it defined is importable from here as before.
from benchmarks.gate_replica import (FAIL, INCONCLUSIVE, OUTCOME_CODE, PASS, Tests, decide_exact,  # noqa: E402,F401
                                     holm_adjusted, task_tests)
from benchmarks.gate_report import CHECK_FAILURES, demo, from_run, report_design, sm120, time_gate  # noqa: E402,F401
from benchmarks.gate_simulation import RunResult, TaskSpec, planned_repeats, simulate_run  # noqa: E402,F401


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
