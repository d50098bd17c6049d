"""The fixed design against sequential stopping (analysis/sequential.py) and screening, apart and together, at EQUAL
PER-TASK POWER: generated tokens, false alarms, power, and what is left inconclusive, on the same simulated runs.

The model is benchmarks/gate_false_alarms.py's: per task and simulated run, each document's success probability
p_i ~ Beta(mean accuracy, intra-class correlation `consistency`) (or p_i given: `--from-run`); a side's score of a
document is Binomial(repeats, p_i) / repeats; a cell with a true drop d answers with p_i (1 - d / accuracy); a
broken cell (stated model) answers with p_i x `--broken-factor` (0.3: a damaged model, about a 0.6 drop).

The designs (`Design`), on the SAME draws (a cell's repeats are nested: its data after R repeats is the first R of
the draws any longer design uses, so designs differ only by their rule and their repeats); the reference runs all
its Rr in every one, and the final analysis is always `decide_family` over every cell x task of the matrix with
`alphas[(cell, task)] = final_levels(alpha, looks, repeats reached, cells x tasks)`:

- fixed: every cell runs all its repeats Rc of every task (`sizing.repeats_for_task`, cells x tasks of the matrix),
  decided once at alpha;
- screening alone: a cell that is not faster than the reference (`screened(verdict, full_quality=False)`; here a
  stated half of the cells) runs one repeat of every task (or, of a task it runs once, `--screen-documents`,
  quality.screen_documents, 0.25, of its documents), decided as a fixed design of it at the full alpha; the others
  run all their repeats, decided once;
- looks alone: every cell runs each task in looks `default_plan(R, [])` (1, a quarter, a half and all of R) and
  after each look `decide_look(evidence so far, margin, quality_levels(alpha, looks, cells x tasks)[k],
  family_size=cells x tasks)`; the task stops at its first stop ("equivalent" or "worse");
- looks + screening: both;
- looks + screening + equivalence-only look: both, with the equivalence test's own look at three quarters
  (`quality.equivalence_looks: [0.75]`, the package's default since 2026-12-05: `DEFAULT_DESIGN` says which row is
  the default), and "looks + screening, equivalence-only look at 3/4", the same at looks + screening's repeats;
  `equivalence_look_criterion` says whether the look earns its place;
- looks + screening + cell stop: also the runner's rule (runner/cellphases.py) that once one task of a cell is worse
  its other tasks stop at their next look; and "sequential + screening", the runner's design (with the package's
  default looks) at the fixed design's repeats: the design the 2026-12-01 figure (37.4%) measured.

Equal per-task power (issue 37, finding 8: the 37.4% compared designs of different power), of both tests. The
per-task power is the rate at which each task of a fast cell with a true drop (`--drop-multiple` x the margin) is
called worse on its own; the equivalence power the rate at which each task of a fast cell truly worse by half the
margin is called equivalent (a cell a little worse than the reference, which should ship). Looks spend the worse
test's alpha early (its last look is at about 0.046, not 0.05), an equivalence-only look the equivalence test's (its
last look 0.040, not 0.044), and a screened cell's one repeat weakens Holm's step-down for the others, so each
design's maximum repeats R per task are raised: the equal-power search (`search_equal_power`, `--search-trials`
runs of its own, and as many near the margin) takes, per task, the smallest R = Rc + j at which both are at least
the fixed design's on the same draws; then every design is measured on FRESH draws (`--trials`, `--near-trials`),
so the power reached is not the search's luck. The cell stop is off in the designs compared:
a task stopped because another task of its cell was worse is rarely called worse itself (per-task power 61-67%
against the fixed design's 84%, at the fixed repeats and at the equal-power ones), which costs the cell's call
nothing; the cell-stop rows say what the rule saves on top, and a "fixed repeats" row what the raised repeats cost.
Where the fixed design's per-task power is below MIN_POWER (cells that answer once: about 0.5%) there is nothing to
match and the repeats stay. Each regime is measured on the stated mix and on the same mix without broken cells
(`--no-without-broken` skips it); the null, least-favourable-null and near-the-margin scenarios use the stated mix's
designs (and the other mix's where their repeats differ; near the margin, the designs without the cell stop).

Every run is decided by a numpy replica of those functions (the t-test over documents, the continuity-corrected
score test where both sides are 0/1, Holm's step-down; score-test intervals come from the package's own
`PairedEvidence`, cached). The first `--check` runs of every scenario (the search's first run) are also decided by
the package's own functions, look by look, for every design; the script says how many agreed and exits 1 if any
did not. Equivalence (a look's stop and the verdict) is decided two ways:
- by default the t (and the score test), in the replica and in the package's check (`paired_evidence(...,
  calibrate=False)`): fast, 4,000 runs a scenario; a worse stop is the package's exactly, an equivalence stop is a
  little earlier than the package's where the t is too liberal at a look's small levels;
- `--calibrated`: as the package decides it, by the calibrated test (analysis/nullboot.py; the replica asks
  `PairedEvidence.equivalent` for each (run, cell, task) still running at a look, a few ms each, and the package's own
  functions decide the checked runs with their calibrated evidence). Slow: a few hundred runs. The equal-power
  search still uses the t (see `measure`); the fresh runs then say whether the calibrated test keeps the power.
benchmarks/README.md gives both; benchmarks/recommendation.py measures the calibrated verdicts' errors.

Tokens: documents x repeats x tokens per answer (stated assumptions, reasoning chains), summed over the cells and
the reference. Rates carry one standard error over runs (+-); design differences are paired (same draws).

    .venv/bin/python benchmarks/sequential_design.py [--trials 4000] [--search-trials 2000] [--null-trials 4000]
        [--boundary-trials 2000] [--no-without-broken] [--from-run DIR] [--cells 24 --slow-share 0.5 ...] (--help)
    .venv/bin/python benchmarks/sequential_design.py --calibrated --trials 400 --null-trials 0 --boundary-trials 0 \
        --check 2 --no-without-broken      # the package's calibrated equivalence: the stated mix
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace  # noqa: F401  (re-exported: sequential_design.replace)
from pathlib import Path
from typing import Sequence

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

# The benchmark lives in these modules; everything it defined is importable from here as before.
from benchmarks.gate_replica import holm_adjusted  # noqa: E402,F401
from benchmarks.paired_replica import Evidence  # noqa: E402,F401
from benchmarks.sequential_designs import (AT_FIXED, BASES, BOTH, BOTH_LOOK, CELL_STOP,  # noqa: E402,F401
                                           DEFAULT_DESIGN, DEFAULT_HAS_LOOK, FIXED, LOOKS_ALONE, MIN_POWER, OFFSETS,
                                           PACKAGE, SCREENING_ALONE, WITH_EQUIVALENCE_LOOK, Design, Result,
                                           equal_power_designs)
from benchmarks.sequential_model import (BROKEN, CODE, DROPPED, EQUIVALENCE_LOOK, EQUIVALENT,  # noqa: E402,F401
                                         INCONCLUSIVE, SCREEN_DOCUMENTS, SM120, UNCHANGED, WORSE, Equivalence,
                                         Mix, Task, verdict_of)
from benchmarks.sequential_regime import (from_run, measure, mixes_of, parse_tasks, print_tasks,  # noqa: E402,F401
                                          run_regime, sized_tasks)
from benchmarks.sequential_report import (CHECK_FAILURES, _rate, per_task_power, report_boundary,  # noqa: E402,F401
                                          report_mixed, report_near, report_null)
from benchmarks.sequential_search import (SEARCH_KEYS, all_dropped, per_task_equivalence,  # noqa: E402,F401
                                          print_search, search_equal_power)
from benchmarks.sequential_simulation import decide_with_package, simulate  # noqa: E402,F401
from benchmarks.sequential_verdicts import done_when, equivalence_look_criterion  # noqa: E402,F401


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=4000, help="simulated runs of the mixed cells (default 4000)")
    parser.add_argument("--null-trials", type=int, default=4000, help="simulated runs with every cell unchanged")
    parser.add_argument("--boundary-trials", type=int, default=2000,
                        help="simulated runs with every cell truly worse by exactly the margin")
    parser.add_argument("--near-trials", type=int, default=2000,
                        help="simulated runs with every cell truly worse by half the margin (equivalence power)")
    parser.add_argument("--search-trials", type=int, default=2000,
                        help="simulated runs of the equal-power search (its own draws; default 2000)")
    parser.add_argument("--no-without-broken", action="store_true",
                        help="measure the stated mix only, not also the same mix without broken cells")
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
    parser.add_argument("--calibrated", action="store_true",
                        help="decide equivalence (stops and verdicts) by the package's calibrated test, as the package "
                             "does (a few ms a comparison still running at a look: use a few hundred --trials)")
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
    run_regime(tasks, mixes_of(args), margin=args.margin, alpha=args.alpha, drop=args.drop_multiple * args.margin,
               broken_factor=args.broken_factor, trials=args.trials, null_trials=args.null_trials, seed=args.seed,
               check=args.check, label="sm120" + (f", cells answer {args.cell_repeats}x" if args.cell_repeats else ""),
               token_goal=args.token_goal, points=args.points,
               boundary_trials=args.boundary_trials, near_trials=args.near_trials,
               screen_documents=args.screen_documents,
               search_trials=args.search_trials, calibrate=args.calibrated)
    if args.from_run:
        from_run(args)
    print(f"\n{time.perf_counter() - start:.0f} s in all")
    if CHECK_FAILURES:
        print("\nTHE REPLICA DISAGREES WITH THE PACKAGE'S DECISIONS:\n  " + "\n  ".join(CHECK_FAILURES))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
