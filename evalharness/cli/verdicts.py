"""The commands that judge runs: gate (a run against a baseline), baseline save, compare (two runs of one matrix)."""

from __future__ import annotations

import argparse
from pathlib import Path

from evalharness.cli.common import cell_mapping, fail


INCONCLUSIVE_EXIT = 3  # neither pass nor fail: the samples cannot settle the margin (the message says how many would)


def cmd_gate(args: argparse.Namespace) -> int:
    from evalharness.analysis.drift import refresh_drift
    from evalharness.records.io import ResultsError, load_run

    run_dir = Path(args.dir)
    try:
        run = load_run(run_dir)
        refresh_drift(run, run_dir)
    except ResultsError as exc:
        return fail(str(exc))
    status = gate_run(run, run_dir, args.baseline, args.cell, args.json)
    if status != 2:
        record_gate(run, run_dir)
    return status


def gate_run(run, run_dir: Path, baseline_path: str, cells: list[str] | None, json_path: str | None) -> int:
    """Gate a loaded, refreshed run against a baseline file: prints the outcome, keeps it in the run's decision record
    (the verdict box's "Gate:" line) and returns the gate's exit status (0 pass, 1 fail, 2 bad input, 3
    inconclusive). `gate`, and `run` / `report` with --baseline, call it."""
    from evalharness.analysis.decision import decide, qualifiers
    from evalharness.analysis.gate import evaluate, gate_record, machine_warning
    from evalharness.records.baseline import BaselineError, load_baseline
    from evalharness.records.io import ResultsError, atomic_write_text
    from evalharness.records.provenance import now_iso

    try:
        baseline = load_baseline(Path(baseline_path))
        result = evaluate(run, run_dir, baseline, cell_mapping(cells))
    except (ResultsError, BaselineError) as exc:  # BaselineError covers GateError
        return fail(str(exc))
    if json_path:
        try:
            atomic_write_text(Path(json_path), result.model_dump_json(indent=1) + "\n")
        except OSError as exc:
            return fail(f"cannot write {json_path}: {exc}")
    warning = machine_warning(run, baseline)
    if run.decision is None:
        run.decision = decide(run)
    run.decision.gate = gate_record(result, baseline_path, warning, now_iso())
    run.decision.warnings = qualifiers(run, run.decision)  # the gate's machine warning among them
    if warning:
        print(f"gate: warning: {warning}")
    caveat = "; baseline from another kind of machine, see the warning" if warning else ""
    counts = {o: sum(c.outcome == o for c in result.cells) for o in ("pass", "fail", "inconclusive")}
    where = (f"against {baseline_path} ({counts['pass']} pass, {counts['fail']} fail, {counts['inconclusive']} "
             f"inconclusive of {len(result.cells)} cells; {result.family_size} task comparisons; "
             f"{result.thresholds}{caveat})")
    for line in result.inconclusive:
        print(f"  ? {line}")
    if result.outcome == "fail":
        print(f"gate: FAIL: {len(result.violations)} violation(s) {where}")
        for line in result.violations:
            print(f"  - {line}")
        print(guarantee(baseline))
        return 1
    if result.outcome == "inconclusive":
        print(f"gate: INCONCLUSIVE: nothing failed, but not every task is shown non-inferior {where}")
        print(guarantee(baseline))
        return INCONCLUSIVE_EXIT
    print(f"gate: pass {where}")
    print(guarantee(baseline))
    return 0


def record_gate(run, run_dir: Path) -> None:
    """Save the run with its gate outcome and render its reports again, so report.md and summary.md (the pull
    request's comment) carry the gate's line; $GITHUB_STEP_SUMMARY, which holds the run's summary, gets that line.
    A folder that cannot be written is said, and the gate's status stands."""
    from evalharness.records.io import ResultsError, save_run
    from evalharness.render.outputs import append_step_summary, render_all
    from evalharness.render.verdict import gate_line
    from evalharness.serving.engines import ENGINES

    try:
        save_run(run, run_dir)
        render_all(run, run_dir, step_summary=False, engines=ENGINES)
    except (OSError, ResultsError) as exc:
        print(f"gate: warning: the outcome is not recorded in {run_dir} ({exc}); the reports do not show it")
    append_step_summary(f"> {gate_line(run.decision.gate)}")  # the run's summary is there already


def guarantee(baseline) -> str:
    """What the gate's error rates hold for: the baseline is one draw (issue 37: an unchanged configuration passed
    18% of the time against a baseline at its 90th percentile, 46% on average), so the rates are over draws of the
    baseline and the run together; more repeats behind the baseline make one draw weigh less."""
    repeats = sorted({t.repeats for c in baseline.cells.values() for t in c.tasks.values()})
    merged = f", pooled from {len(baseline.merged) + 1} runs" if baseline.merged else ""
    return (f"  (the baseline holds {'/'.join(map(str, repeats)) or 'no'} repeat(s) per document{merged}; a run in "
            "which nothing changed fails at most alpha of the time over draws of the baseline and the run together, "
            "and against this one baseline more or less often by its own luck: refresh it with `evalharness "
            "baseline save RUN -o BASELINE --merge` from a run with other seeds, docs/drift-and-gate.md)")


def cmd_baseline_save(args: argparse.Namespace) -> int:
    from evalharness.analysis.baselines import make_baseline, merge_baselines
    from evalharness.records.baseline import BaselineError, Thresholds, load_baseline, save_baseline
    from evalharness.records.io import ResultsError, load_run

    run_dir = Path(args.dir)
    try:
        run = load_run(run_dir)
        gate = {k: v for k, v in (run.meta.matrix.get("gate") or {}).items() if v is not None}
        baseline = make_baseline(run, run_dir, args.cell, Thresholds(**gate))
        if getattr(args, "merge", False):
            baseline = merge_baselines(load_baseline(Path(args.output)), baseline)
    except (ResultsError, BaselineError) as exc:  # BaselineError covers GateError
        return fail(str(exc))
    save_baseline(baseline, Path(args.output))
    repeats = sorted({t.repeats for c in baseline.cells.values() for t in c.tasks.values()})
    print(f"baseline: {args.output} ({', '.join(baseline.cells)}; engine {baseline.engine} {baseline.engine_version}; "
          f"{'/'.join(map(str, repeats)) or 'no'} repeats per document"
          + (f"; merged with the runs of {', '.join(baseline.merged)}" if baseline.merged else "") + ")")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from evalharness.analysis.compare import compare_runs
    from evalharness.records.baseline import BaselineError
    from evalharness.records.io import ResultsError, load_run
    from evalharness.render.outputs import render_comparison

    base_dir, head_dir = Path(args.base), Path(args.head)
    try:
        base, head = load_run(base_dir), load_run(head_dir)
        cmp = compare_runs(base, base_dir, head, head_dir)  # CompareError, CellFileError and GateError included
    except (ResultsError, BaselineError) as exc:
        return fail(str(exc))
    out_dir = Path(args.out) if args.out else None
    try:
        short = render_comparison(cmp, base, head, out_dir, Path(args.markdown) if args.markdown else None)
    except OSError as exc:
        return fail(f"cannot write the comparison: {exc}")
    if out_dir is None:  # nothing written to read: the terminal gets the short form (its table of cells)
        print(short, end="" if short.endswith("\n") else "\n")
    counts = {v: sum(c.verdict == v for c in cmp.cells) for v in ("fails", "changed", "only", "differs", "same")}
    print(f"compare: {base_dir} -> {head_dir}: {len(cmp.cells)} cells: {counts['fails']} fail the gate, "
          f"{counts['changed']} changed beyond noise, {counts['only']} in one run only, {counts['differs']} differ in "
          f"settings or warnings, {counts['same']} unchanged within noise")
    if cmp.machine_warning:
        print(f"compare: warning: {cmp.machine_warning}")
    for line in cmp.violations:
        print(f"  - {line}")
    if out_dir is not None:
        print(f"comparison: {out_dir / 'compare.md'} (short form: {out_dir / 'summary.md'})")
    if cmp.failed():
        print(f"compare: FAIL: {len(cmp.violations)} violation(s) of the gate thresholds ({cmp.thresholds})")
        return 1
    print(f"compare: pass ({cmp.thresholds})")
    return 0
