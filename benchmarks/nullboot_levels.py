"""The calibrated test's size at each look's level (issue 57, point 6): analysis/nullboot.py at the levels the
sequential looks spend (analysis/sequential.py `quality_levels`, the equivalence test's alpha t^2), the cell at the
look's repeats.

Issue 57 measured the gain side of equivalence (H0 "drop <= -margin" at a true gain of the margin) at 1.50% where
0.0107 was allowed (look 3 of 15, the cell at 8 repeats) and put it down to too few resamples. Per look this
measures each side's size as the ratio of its error to the look's level: the gain side at a true gain of the margin,
the drop side (the gate's pass side) at a true drop of the margin; `none`, an unchanged cell, is how often the look
calls it equivalent (both sides); and the cost of a decision (ms per comparison that reaches the resamples).
`--resamples B` fixes B: what more resamples alone do (nothing, measured: benchmarks/README.md).

Model: recommendation.py's (gate_false_alarms.py's Beta model, one shared reference, a cell's true change scaling
every p_i); tasks at the sizes `sizing.repeats_for_task` plans for the sm120 matrix (24 cells x 4 tasks, margin 0.02,
consistency 0.5): gsm8k 200 documents at 0.95 (15 cell repeats, 44 the reference's: looks [1, 4, 8, 12, 15]) and
gpqa_diamond 198 at 0.80 (30 / 118: looks [1, 8, 15, 23, 30]). The shipped matrices run each cell's tasks once (one
look, tested at alpha 0.05); the looks of these planned repeats are the low levels a matrix reaches. A first look
(one repeat, levels 0.0002 and under) is left out unless `--first`: its rejections are too rare to count in
minutes. The first `--check` runs of every line are also decided by the verdict's path
(`PairedEvidence.calibrated_p` against the level; for `none`, `equivalence_bounds` inside +-margin): the script
exits 1 if any disagree.

`--regime confirm` measures instead where sm120 now decides (issue 61): its confirmation, each task on its own
documents at its answers a side and margin (benchmarks/two_stage.py SM120_TASKS), one test at alpha / tries for one
and two tries (`--tasks all` or names).

    .venv/bin/python benchmarks/nullboot_levels.py [--resamples B] [--tasks gsm8k,gpqa_diamond]
        [--sides gain,drop,none] [--looks 2,3] [--trials 20000] [--seed 1] [--first] [--check 20]
        [--regime looks|confirm]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import zlib
from pathlib import Path
from typing import Sequence

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

from benchmarks.recommendation import draw, sized  # noqa: E402
from evalharness.analysis import nullboot  # noqa: E402
from evalharness.analysis.sequential import default_plan, quality_levels  # noqa: E402
from evalharness.analysis.stats import paired_evidence  # noqa: E402

MARGIN, ALPHA, CELLS, TASKS = 0.02, 0.05, 24, 4
SIZES = {"gsm8k": (200, 0.95), "gpqa_diamond": (198, 0.80)}


def decide(evidence, delta: float, side: nullboot.Side, level: float) -> tuple[bool, bool]:
    """(rejected, resampled): one side of `PairedEvidence.equivalent` alone, as the look decides it."""
    if not (evidence.method == "t" and evidence.drops and evidence.se > 0):
        return evidence._plain_p(delta, side) < level, False
    if (evidence.estimate <= delta) if side == "above" else (evidence.estimate >= delta):
        return False, False
    rejected = nullboot.rejects(evidence.drops, evidence.weights, delta, evidence.statistic(delta), side, level)
    return (evidence._plain_p(delta, side) < level if rejected is None else bool(rejected)), rejected is not None


def line(task, looks_at: int, level: float, side: str, trials: int, seed: int, check: int,
         margin: float = MARGIN) -> dict:
    """Size of one side at one look: `trials` runs of the cell at `looks_at` repeats against the full reference."""
    spec = type(task)(task.name, docs=task.docs, accuracy=task.accuracy, consistency=task.consistency,
                      cell_repeats=looks_at, reference_repeats=task.reference_repeats)
    change, delta, test_side = {"gain": (-margin, -margin, "above"), "drop": (margin, margin, "below"),
                                 "none": (0.0, margin, "below")}[side]
    rng = np.random.default_rng([seed, zlib.crc32(f"{task.name} {looks_at} {side}".encode())])
    ref, cells = draw(spec, rng, trials, [change])
    hits = resampled = disagreed = 0
    spent = 0.0
    for i in range(trials):
        evidence = paired_evidence(ref[i], cells[i, 0])
        start = time.perf_counter()
        if side == "none":  # the look's whole decision, both sides (PairedEvidence.equivalent)
            rejected, boot = evidence.equivalent(margin, level), bool(evidence.drops)
        else:
            rejected, boot = decide(evidence, delta, test_side, level)
        spent += time.perf_counter() - start
        hits += rejected
        resampled += boot
        if i < check:
            low, high = evidence.equivalence_bounds(margin, level)
            disagreed += rejected != ((-margin < low and high < margin) if side == "none" else
                                      evidence.calibrated_p(delta, test_side, level) < level)
    return dict(size=hits / trials, ratio=hits / trials / level, se=math.sqrt(level * (1 - level) / trials) / level,
                ms=1000 * spent / max(1, resampled), resampled=resampled, disagreed=disagreed)


def confirmation_lines(args) -> int:
    """The sides' sizes where a shipped matrix now decides: sm120's confirmation (benchmarks/two_stage.py
    SM120_TASKS, matrices/sm120.yaml `confirm`), one test a task at alpha / tries. Returns the disagreements with
    the verdict's path."""
    from benchmarks.recommendation import TaskSpec
    from benchmarks.two_stage import SM120_TASKS

    failures = 0
    print(f"sm120's confirmation, {args.trials} runs a line; size = the side's error / the level "
          "(+- one standard error)")
    print("| task: documents, repeats a side, margin | tries: level | side | error (none: equivalent) | "
          "error / level | ms a decision |")
    print("|---|---|---|---|---|---|")
    for name, _, accuracy, margin, documents, repeats in SM120_TASKS:
        if args.tasks != "all" and name not in args.tasks.split(","):
            continue
        task = TaskSpec(name, docs=documents, accuracy=accuracy, consistency=0.5, cell_repeats=repeats,
                        reference_repeats=repeats)
        for tries in (int(t) for t in args.tries.split(",")):
            level = ALPHA / tries
            for side in args.sides.split(","):
                got = line(task, repeats, level, side, args.trials, args.seed, args.check, margin)
                failures += got["disagreed"]
                ratio = "(power)" if side == "none" else f"**{got['ratio']:.2f}x** +-{got['se']:.2f}"
                print(f"| {name}: {documents}, {repeats}, {margin} | {tries}: {level:.3f} | {side} | "
                      f"{100 * got['size']:.2f}% | {ratio} | {got['ms']:.2f} |", flush=True)
    return failures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--resamples", type=int, default=0, help="fix B (0: the rule's)")
    parser.add_argument("--tasks", default="gsm8k,gpqa_diamond")
    parser.add_argument("--sides", default="gain,drop,none", help="gain: a true gain of the margin, the gain "
                        "side's test; drop: a true drop of the margin, the drop side's; none: no change, both (power)")
    parser.add_argument("--trials", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--first", action="store_true", help="also the first look (one repeat)")
    parser.add_argument("--looks", default="", help="only these looks (1-based, e.g. 2,3)")
    parser.add_argument("--check", type=int, default=20)
    parser.add_argument("--tries", default="1,2", help="confirm: the tries whose level alpha / tries is measured "
                        "(confirm.tries is 1 to 4)")
    parser.add_argument("--regime", choices=("looks", "confirm"), default="looks", help="looks: the sequential "
                        "looks of sm120's planned repeats; confirm: sm120's confirmation (one look a try at alpha / "
                        "tries, its documents and repeats a side, each task's margin), tries 1 and 2")
    args = parser.parse_args(argv)
    if args.resamples:
        nullboot.resamples_for = lambda level: args.resamples
    began = time.time()
    if args.regime == "confirm":
        failures = confirmation_lines(args)
        print(f"\n{time.time() - began:.0f} s; checked against calibrated_p: {failures} disagreements")
        return 1 if failures else 0
    failures = 0
    print(f"{f'B fixed at {args.resamples}; ' if args.resamples else ''}{args.trials} runs a line, "
          f"margin {MARGIN}, alpha {ALPHA}; size = the side's error / the look's level (+- one standard error)")
    print("| task (cell/ref repeats) | look: repeats | level | B | side | "
          "error (none: equivalent) | error / level | ms a decision |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.tasks.split(","):
        docs, accuracy = SIZES[name]
        task = sized(name, docs, accuracy, 0.5, MARGIN, ALPHA, CELLS, TASKS)
        looks, equivalence_only = default_plan(task.cell_repeats)
        levels = quality_levels(ALPHA, looks, CELLS * TASKS, equivalence_only)
        for k, (look, level) in enumerate(zip(looks, levels)):
            if (k == 0 and not args.first) or (args.looks and str(k + 1) not in args.looks.split(",")):
                continue
            for side in args.sides.split(","):
                got = line(task, look, level.equivalent, side, args.trials, args.seed, args.check)
                failures += got["disagreed"]
                ratio = "(power)" if side == "none" else f"**{got['ratio']:.2f}x** +-{got['se']:.2f}"
                print(f"| {name} ({task.cell_repeats}/{task.reference_repeats}) | {k + 1}: {look} | "
                      f"{level.equivalent:.5f} | {nullboot.resamples_for(level.equivalent)} | {side} | "
                      f"{100 * got['size']:.3f}% | {ratio} | {got['ms']:.2f} |", flush=True)
    print(f"\n{time.time() - began:.0f} s; checked against calibrated_p: {failures} disagreements")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
