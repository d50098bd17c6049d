"""The commands about a matrix and its run folder: validate (no launch), run, report (re-render)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evalharness.cli.common import EXIT_BAD_INPUT, fail
from evalharness.render.plan import plan_text


def cmd_validate(args: argparse.Namespace) -> int:
    import shlex

    from evalharness.matrix.errors import SpecError
    from evalharness.matrix.expand import cell_engines
    from evalharness.records.masking import mask_argv, mask_env
    from evalharness.serving.engines import ENGINES, load_matrix, render_args

    try:
        matrix, cells, reference = load_matrix(args.matrix)
    except SpecError as exc:
        return fail(str(exc))
    engines = cell_engines(cells, reference)
    print(f"{args.matrix}: matrix {matrix.name!r}, {'engines' if len(engines) > 1 else 'engine'} "
          f"{' + '.join(engines)}, {len(cells)} cells, reference {reference.id}")
    for name in engines:  # one example launch per engine: the reference's, else the first cell on that engine
        example_cell = reference if reference.engine == name else next(c for c in cells if c.engine == name)
        if ENGINES[name].launches:
            example = ENGINES[name].launch_plan(matrix, example_cell, port=0, work_dir="OUT")
            print(f"  launch ({example_cell.id}, port chosen at run time): {shlex.join(mask_argv(example.argv))}")
    for cell in cells:
        flags = shlex.join(mask_argv(render_args(cell.args))) or "(no flags)"
        env = " ".join(f"{k}={v}" for k, v in mask_env(cell.env).items())
        on = f" [{cell.engine}]" if len(engines) > 1 else ""
        print(f"  {cell.id}{' (reference)' if cell.id == reference.id else ''}{on}: {flags}"
              f"{'  env: ' + env if env else ''}")
    if _task_kind_notes(matrix, cells, args.matrix):
        return EXIT_BAD_INPUT
    status = 0
    for name in engines:  # each engine's own check of its cells against what is installed, where it has one
        status = max(status, _engine_check(matrix, name, [c for c in cells if c.engine == name], args))
    return status


def _task_kind_notes(matrix, cells, matrix_path: str) -> int:
    """What each cell's flags mean for the matrix's tasks of a measure's own kind (calls: tool calls, JSON output):
    notes, not errors; such a task's data that does not load is bad input (exit 2)."""
    from evalharness.measures.tasks import data_problems, flag_notes
    from evalharness.serving.engines import ENGINES

    if matrix.quality is None:
        return 0
    tasks, include_path = matrix.quality.tasks, matrix.quality.include_path
    for task, problem in data_problems(tasks, include_path).items():
        if problem:
            return fail(f"{matrix_path}: quality.tasks {task}: {problem}")
    for cell in cells:
        for note in flag_notes(tasks, include_path, ENGINES[cell.engine], cell.args):
            print(f"  note ({cell.id}): {note}")
    return 0


def _engine_check(matrix, name: str, cells, args) -> int:
    """One engine's cells through the engine as installed (its parser and environment), where it has that check."""
    from evalharness.serving.engines import ENGINES

    engine = ENGINES[name]
    if args.no_engine_check:
        if engine.checks_install:  # an engine with a check says it was skipped
            print(f"{engine.label}: not checked (--no-engine-check): flags and variables were checked for shape only")
        return 0
    result = engine.check_cells(matrix, cells, args.engine_python)
    if result is None:
        return 0
    if not result.checked:
        # a CI step must not pass having checked nothing: say so and fail, unless told not to check
        return fail(f"{engine.label}: could not check the cells against the installed {engine.label}: "
                    f"{result.reason} (pass --no-engine-check to validate the matrix's shape only)")
    print(f"{engine.label} {result.version} ({result.python}): {len(cells) - len(result.failed)}/{len(cells)} "
          "cells accepted by its parser and environment")
    notes = sorted({note for check in result.cells for note in check.notes})
    for note in notes:
        print(f"  note: {note}")
    for check in result.failed:
        if not check.ok:
            print(f"  REJECTED {check.id}: {check.error} ({name} {result.version})", file=sys.stderr)
        if check.unknown_env:
            print(f"  REJECTED {check.id}: environment variables that {name} {result.version} does not define: "
                  f"{', '.join(check.unknown_env)}", file=sys.stderr)
    return EXIT_BAD_INPUT if result.failed else 0


def cmd_run(args: argparse.Namespace) -> int:
    from evalharness.matrix.errors import SpecError
    from evalharness.serving.engines import load_matrix
    from evalharness.runner.run import RunError, execute

    try:
        matrix, cells, reference = load_matrix(args.matrix)
    except SpecError as exc:
        return fail(str(exc))
    out_dir = Path(args.out)
    if matrix.quality is not None:
        try:  # the same plan `evalharness plan` prints, a group sized from its subtasks
            plan = _plan(matrix, len(cells), out_dir if (out_dir / "results.json").exists() else None,
                         groups=_groups(matrix), greedy=_greedy(matrix))
        except ValueError as exc:
            return fail(f"{args.matrix}: {exc}")
        print(plan_text(plan), end="")
        if plan.over_budget() and not args.over_budget:
            return fail(f"{args.matrix}: quality.budget_hours {plan.budget_hours:g} cannot reach the margins: the "
                        f"needed design takes {plan.hours or sum(t.hours or 0 for t in plan.tasks):,.1f} hours "
                        "(see the plan above; --over-budget runs the matrix as written anyway)")
    try:
        if args.ray is not None or matrix.cluster is not None:  # only then is Ray imported
            from evalharness.runner.ray_runner import execute_ray

            address = None if args.ray in (None, "") else args.ray
            run, status = execute_ray(matrix, cells, reference, Path(args.matrix), out_dir, args.resume, address)
        else:
            run, status = execute(matrix, cells, reference, Path(args.matrix), out_dir, args.resume)
    except RunError as exc:
        return fail(str(exc))
    print(f"{len(run.cells)}/{len(run.cell_order)} cells: {run.status_summary() or 'no cells finished'}")
    if args.baseline and not status:  # an interrupted run is gated once it is finished
        status = _gate(run, out_dir, args)
    _print_verdict(run)
    print(f"report: {out_dir / 'report.md'}")
    print(f"results: {out_dir / 'results.json'}")
    return status


def _save_decision(run, out_dir: Path) -> None:
    """results.json with the drift and the decision as this version decides them (issue 58, 1: the decision record is
    written after `report` as after `run`); a folder that cannot be written is said and the reports still rendered."""
    from evalharness.records.io import save_run

    try:
        save_run(run, out_dir)
    except OSError as exc:
        print(f"report: warning: results.json in {out_dir} is not updated ({exc.strerror or exc}); the reports are "
              "rendered from the decision made now")


def _gate(run, out_dir: Path, args: argparse.Namespace) -> int:
    """--baseline on `run` / `report`: the gate's outcome kept in the decision record and the reports rendered
    again with it (`report` renders them next anyway); its exit status (cli/verdicts.py gate_run)."""
    from evalharness.cli.verdicts import gate_run, record_gate

    status = gate_run(run, out_dir, args.baseline, args.cell, None)
    if status != 2:
        record_gate(run, out_dir)
    return status


def _print_verdict(run) -> None:
    """The report's verdict box, as plain lines, where the run decided something, then the cells' status table
    (issue 58, 7)."""
    from evalharness.render.console import status_table
    from evalharness.render.verdict import verdict_plain

    lines = verdict_plain(run)
    if lines:
        print("", *lines, sep="\n")
    print("", *status_table(run), "", sep="\n")


def _plan(matrix, cells: int, previous: Path | None, tok_s: float | None = None, budget: float | None = None,
          **given):
    """The accuracy plan of a matrix, from a previous run's reference where there is one."""
    from evalharness.analysis.plan import make_plan
    from evalharness.records.io import load_run

    before = (load_run(previous), previous) if previous is not None else None
    return make_plan(matrix.model_dump(mode="json"), previous=before, tok_s=tok_s, budget_hours=budget, cells=cells,
                     **given)


def _per_task(values: list[str] | None, kind, flag: str) -> dict:
    """TASK=VALUE options: --documents a whole number of at least 1, --accuracy a number in (0, 1]."""
    out = {}
    for item in values or []:
        task, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"{flag} {item!r}: expected TASK=VALUE")
        try:
            out[task] = kind(value)
        except ValueError:
            raise ValueError(f"{flag} {item!r}: {value!r} is not a {kind.__name__}") from None
        if kind is int and out[task] < 1:
            raise ValueError(f"{flag} {item!r}: expected at least 1 document")
        if kind is float and not 0 < out[task] <= 1:
            raise ValueError(f"{flag} {item!r}: expected an accuracy above 0 and at most 1")
    return out


def cmd_plan(args: argparse.Namespace) -> int:
    from evalharness.matrix.errors import SpecError
    from evalharness.serving.engines import load_matrix
    from evalharness.records.io import ResultsError

    try:
        matrix, cells, _ = load_matrix(args.matrix)
    except SpecError as exc:
        return fail(str(exc))
    if matrix.quality is None:
        return fail(f"{args.matrix}: quality: the matrix has no quality section, nothing to plan")
    try:
        answer_tokens = _per_task(args.answer_tokens, int, "--answer-tokens")
        unknown = (set(_per_task(args.documents, int, "--documents"))
                   | set(_per_task(args.accuracy, float, "--accuracy")))
        unknown = (unknown | set(answer_tokens)) - set(matrix.quality.tasks)
        if unknown:
            raise ValueError(f"--documents/--accuracy/--answer-tokens name tasks the matrix does not run: "
                             f"{', '.join(sorted(unknown))}")
        plan = _plan(matrix, len(cells), Path(args.from_run) if args.from_run else None, args.tok_s,
                     args.budget_hours, documents=_per_task(args.documents, int, "--documents"),
                     accuracy=_per_task(args.accuracy, float, "--accuracy"), consistency=args.consistency,
                     answer_tokens=answer_tokens, startup_min=args.startup_min, groups=_groups(matrix),
                     greedy=_greedy(matrix))
    except (ResultsError, OSError, ValueError) as exc:
        return fail(str(exc))
    print(plan_text(plan), end="")
    return 0


def _task_folders(matrix) -> list[Path]:
    """The task folders the quality phase indexes: include_path or the shipped tasks, and lm-eval's own where
    include_defaults."""
    import importlib.util

    from evalharness.phases.quality import SHIPPED_TASKS

    folders = [Path(matrix.quality.include_path) if matrix.quality.include_path else SHIPPED_TASKS]
    spec = importlib.util.find_spec("lm_eval") if matrix.quality.include_defaults else None
    if spec is not None and spec.submodule_search_locations:
        folders.append(Path(list(spec.submodule_search_locations)[0]) / "tasks")
    return folders


def _greedy(matrix) -> dict:
    """{task: why} for the matrix's tasks whose answers are greedy (analysis/plan_groups.py greedy_tasks)."""
    from evalharness.analysis.plan_groups import greedy_tasks

    quality = matrix.quality
    kwargs = {task: quality.settings_for(task).get("gen_kwargs") or {} for task in quality.tasks}
    return greedy_tasks(quality.tasks, _task_folders(matrix), kwargs)


def _groups(matrix) -> dict:
    """{task: (subtasks, file)} for the matrix's tasks that are lm-eval groups, from the task folders the quality
    phase indexes."""
    from evalharness.analysis.plan_groups import group_sizes

    return group_sizes(matrix.quality.tasks, _task_folders(matrix))


def cmd_report(args: argparse.Namespace) -> int:
    from evalharness.analysis.drift import refresh_drift
    from evalharness.records.io import ResultsError, load_run
    from evalharness.render.outputs import render_all

    out_dir = Path(args.dir)
    try:
        run = load_run(out_dir)
    except ResultsError as exc:
        return fail(str(exc))
    refresh_drift(run, out_dir)
    _save_decision(run, out_dir)
    if args.baseline:  # gated, saved and every report rendered with the gate's line
        gated = _gate(run, out_dir, args)
        if gated != 2:
            _print_verdict(run)
            print(f"report: {out_dir / 'report.md'}")
        return gated
    if args.html:
        from evalharness.render.html import write_html

        try:
            path = write_html(run, out_dir)
        except ResultsError as exc:  # a per-cell file that results.json names is missing or broken
            return fail(str(exc))
        print(f"html: {path} ({path.stat().st_size / 1e6:.1f} MB; opens from disk, no server)")
        return 0
    from evalharness.serving.engines import ENGINES

    try:
        render_all(run, out_dir, engines=ENGINES)
    except ResultsError as exc:
        return fail(str(exc))
    _print_verdict(run)
    print(f"report: {out_dir / 'report.md'}")
    print(f"html: {out_dir / 'report.html'}")
    return 0
