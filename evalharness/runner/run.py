"""A run: preflight, a fresh or resumed run record, every pending cell in order (the reference first), drift and
the renderings refreshed and results.json saved atomically after each cell; then, where the matrix has a `confirm`
section, the second stage (runner/confirmstage.py), each launch saved as it finishes.

Ctrl-C or SIGTERM tears the current server down, saves the finished cells and ends the run with status 130/143;
`--resume` finishes it later. A save that fails (full disk, read-only folder) stops the run with what is kept said.
"""

from __future__ import annotations

import contextlib
import signal
import shutil
import sys
from pathlib import Path

from evalharness import __version__
from evalharness.analysis.drift import refresh_drift
from evalharness.analysis.timing import estimate_line, per_pending_cell_s
from evalharness.matrix.expand import cell_engines
from evalharness.matrix.schema import Cell, Matrix
from evalharness.measures.tasks import data_problems
from evalharness.phases.probes import DEFAULT_PROBES, ProbeError, load_probes
from evalharness.phases.quality import DataMissing
from evalharness.phases.quality import check_task_data as _check_task_data
from evalharness.phases.throughput.prompts import PromptSourceError, load_source
from evalharness.runner.lengthfiles import ensure_length_files, length_files
from evalharness.records.io import ResultsError, load_run, save_run
from evalharness.records.masking import mask_args, mask_argv, mask_env
from evalharness.records.provenance import git_revision, harness_versions, machine_info, machine_kind, now_iso
from evalharness.records.run import RunMeta, RunResult
from evalharness.render.outputs import render_all
from evalharness.runner.cell import run_cell
from evalharness.runner.cellfolders import set_aside_stale
from evalharness.runner.confirmstage import run_confirmation
from evalharness.runner.progress import Progress
from evalharness.runner.reverse import reverse_pass
from evalharness.runner.signals import INTERRUPT, Interrupted
from evalharness.serving.engines import ENGINES, Engine
from evalharness.serving.host import gpu_memory_used_mib
from evalharness.serving.processes import sweep_orphans


class RunError(Exception):
    """The run cannot start (its output folder is unusable or holds another run) or cannot save what it measured."""


class _SaveFailed(Exception):
    pass


def preflight(matrix: Matrix, engine: Engine, cell: Cell) -> None:
    """What would make every cell fail the same way, found before any launch: a model folder or an engine binary
    that is not on this machine. (A hub id cannot be checked offline; the engine's own error classifies it.)"""
    if not engine.launches:
        return
    model = matrix.model
    if model.startswith(("/", "~")) and not Path(model).expanduser().exists():
        raise RunError(f"model: {model} does not exist on this machine (a local model folder was given; a hub id "
                       "looks like org/name)")
    binary = engine.launch_plan(matrix, cell, 1, ".").argv[0]
    found = Path(binary).exists() if "/" in binary else shutil.which(binary) is not None
    if not found:
        raise RunError(f"command: the engine launcher {binary!r} is not "
                       f"{'there' if '/' in binary else 'on PATH'} (is the engine installed?)")


def prepare_run(matrix: Matrix, cells: list[Cell], reference: Cell, matrix_path: Path, out_dir: Path,
                resume: bool) -> tuple[RunResult, dict[str, str]]:
    """A fresh run record, or the previous one when resuming (keeping only cells whose settings are unchanged); and
    the settings hash the previous record held for each of its cells, kept or not."""
    results_path = out_dir / "results.json"
    if results_path.exists() and not resume:
        raise RunError(f"{out_dir} already holds a run (results.json); pass --resume to finish it "
                       "or choose another --out")
    versions = harness_versions()
    meta = RunMeta(
        harness_version=versions["harness"] or __version__,
        engine=" + ".join(cell_engines(cells, reference)),  # the one every cell shares, or each, the reference's first
        lm_eval_version=versions["lm_eval"],
        git_revision=git_revision(Path(__file__).resolve().parent),
        machine=machine_info(),
        matrix_name=matrix.name,
        matrix_path=str(matrix_path),
        matrix=_masked_matrix(matrix),
        started_at=now_iso(),
        command=mask_argv(sys.argv),
    )
    run = RunResult(meta=meta, reference=reference.id, cell_order=[c.id for c in cells])
    recorded: dict[str, str] = {}
    if resume and results_path.exists():
        try:
            previous = load_run(out_dir)
        except ResultsError as exc:
            raise RunError(f"cannot resume: {exc}") from None
        hashes = {c.id: c.settings_hash for c in cells}
        recorded = {cid: r.settings_hash for cid, r in previous.cells.items()}
        kept = {cid: r for cid, r in previous.cells.items() if hashes.get(cid) == r.settings_hash}
        dropped = sorted(set(previous.cells) - set(kept))
        run.cells = kept
        run.meta.started_at = previous.meta.started_at
        run.meta.engine_version = previous.meta.engine_version
        before, now = machine_kind(previous.meta.machine), machine_kind(run.meta.machine)
        if kept and before != now:
            run.notes.append(f"Resumed on another kind of machine: {', '.join(sorted(kept))} measured on {before}, "
                             f"the cells run now on {now}")
        if dropped:
            run.notes.append("Resumed: re-running cells whose settings changed or left the matrix: "
                             f"{', '.join(dropped)}")
    return run, recorded


def _masked_matrix(matrix: Matrix) -> dict:
    data = matrix.model_dump(mode="json")
    data["env"] = mask_env(data.get("env", {}))
    data["args"] = mask_args(data.get("args", {}))
    for values in data.get("axes", {}).values():
        for settings in values.values():
            if settings:
                settings["env"] = mask_env(settings.get("env", {}))
                settings["args"] = mask_args(settings.get("args", {}))
    return data


def family_size(matrix: Matrix, cells: list[Cell]) -> int:
    """The comparisons a run decides as one family: every cell but the reference, times every quality task."""
    return max(1, (len(cells) - 1) * len(matrix.quality.tasks if matrix.quality else []))


def write_outputs(run: RunResult, out_dir: Path) -> None:
    """results.json first (the record), then every renderer of it."""
    save_run(run, out_dir)
    render_all(run, out_dir, engines=ENGINES)


def check_task_data(matrix: Matrix) -> None:
    """The quality tasks' data is on this machine (before anything is launched); a Ray cell's task checks its node."""
    if matrix.quality is not None:
        quality = matrix.quality
        try:
            generated = matrix.length.task_names()  # written into the run folder when it opens
            own = data_problems(quality.tasks, quality.include_path)  # tasks of a measure's own kind (calls)
            problems = [f"task {task}: {problem}" for task, problem in own.items() if problem]
            if problems:
                raise DataMissing("; ".join(problems))
            _check_task_data([t for t in quality.tasks if t not in generated and t not in own],
                             {t: d.model_dump() for t, d in quality.data.items()},
                             quality.include_path, quality.include_defaults)
        except DataMissing as exc:
            raise RunError(f"quality: {exc} (nothing was launched)") from None
    if matrix.batching.enabled:
        from evalharness.phases.prompts import DEFAULT_PROMPTS, BatchPromptsError, load_prompts

        try:
            load_prompts(Path(matrix.batching.prompts) if matrix.batching.prompts else DEFAULT_PROMPTS,
                         matrix.batching.count + 1)
        except BatchPromptsError as exc:
            raise RunError(f"{exc} (nothing was launched)") from None


def open_run(matrix: Matrix, cells: list[Cell], reference: Cell, matrix_path: Path, out_dir: Path,
             resume: bool) -> RunResult:
    """Everything before the first launch, on this machine or a Ray cluster alike: the output folder, the fresh or
    resumed record, the probe set and prompt sources, orphans of a killed harness swept, stale cell folders set aside,
    the first save."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunError(f"cannot create the output folder {out_dir}: {exc.strerror or exc}") from None
    run, recorded = prepare_run(matrix, cells, reference, matrix_path, out_dir, resume)
    if matrix.probes.enabled:
        try:
            load_probes(Path(matrix.probes.prompts) if matrix.probes.prompts else DEFAULT_PROBES)
        except ProbeError as exc:
            raise RunError(str(exc)) from None
    sizing = ensure_length_files(matrix, out_dir)
    note = sizing and (f"Length buckets {', '.join(map(str, matrix.length.buckets))}: "
                       f"{matrix.length.documents} documents each, sized by {sizing}")
    if note and note not in run.notes:
        run.notes.append(note)
    for scenario in matrix.throughput.all_scenarios() if matrix.throughput else []:
        try:
            load_source(scenario.prompts, length_files(matrix, out_dir))
        except PromptSourceError as exc:
            raise RunError(f"throughput scenario {scenario.name}: {exc}") from None
    for found in sweep_orphans(sorted(out_dir.glob("cells/*/server.pid"))):
        run.notes.append(f"On {'resume' if resume else 'start'}: {found}")
    for cell in cells:  # a cell that will run never starts in a folder that other settings filled
        if cell.id not in run.cells:
            try:
                note = set_aside_stale(out_dir / "cells", cell, recorded.get(cell.id))
            except OSError as exc:
                raise RunError(f"cannot set aside {out_dir / 'cells' / cell.id} (measured with other settings): "
                               f"{exc.strerror or exc}") from None
            if note:
                run.notes.append(f"On {'resume' if resume else 'start'}: {note}")
    try:
        write_outputs(run, out_dir)
    except OSError as exc:
        raise RunError(f"cannot write the results in {out_dir}: {exc.strerror or exc}") from None
    return run


def execute(matrix: Matrix, cells: list[Cell], reference: Cell, matrix_path: Path, out_dir: Path, resume: bool,
            progress: Progress | None = None) -> tuple[RunResult, int]:
    """Run every pending cell; return the run and the process exit status (0 done, 130/143 interrupted)."""
    # one launcher per engine and command: a cell on another engine can lack its binary where the reference has its
    for launcher in {(c.engine, tuple(matrix.command_for(c) or ())): c for c in [reference, *cells]}.values():
        preflight(matrix, ENGINES[launcher.engine], launcher)
    check_task_data(matrix)
    run = open_run(matrix, cells, reference, matrix_path, out_dir, resume)
    # the reference runs first: every other cell's probes (and later, drift) are judged against it
    pending = sorted((c for c in cells if c.id not in run.cells), key=lambda c: c.id != reference.id)
    progress = progress or Progress(total=len(cells))
    for note in run.notes:
        progress.message(note)
    done_before = len(cells) - len(pending)
    exit_status = 0
    saved = len(run.cells)
    save_error: str | None = None

    def save() -> None:
        nonlocal saved, save_error
        try:
            save_run(run, out_dir)
            saved = len(run.cells)
            render_all(run, out_dir, engines=ENGINES)
        except OSError as exc:  # disk full, folder gone or read-only: stop, and say what the folder still holds
            save_error = (f"cannot save the results in {out_dir}: {exc.strerror or exc}; results.json still holds "
                          f"the last good save ({saved} finished cells, not marked complete); free the space and "
                          "run again with --resume")
            raise _SaveFailed from exc

    # GPU memory before the first launch: a later cell that finds more held is refused (runner/teardown.py)
    gpu_baseline = gpu_memory_used_mib() if any(ENGINES[c.engine].launches for c in pending) else None
    with INTERRUPT.installed():
        try:
            for offset, cell in enumerate(pending):
                progress.cell(done_before + offset + 1, cell.id)
                result = run_cell(matrix, cell, ENGINES[cell.engine], out_dir, progress, reference.id, gpu_baseline,
                                  run.cells.get(reference.id) if cell.id != reference.id else None,
                                  family_size(matrix, cells))
                with INTERRUPT.deferred():
                    run.cells[cell.id] = result
                    # a reference re-run on resume makes every other cell's drift stale
                    refresh_drift(run, out_dir, only=None if cell.id == reference.id else cell.id)
                    if result.status == "ok" and not run.meta.engine_version:
                        run.meta.engine_version = result.engine_version(run.meta.engine)
                    save()
                    progress.finished(cell.id, result.status, result.reason or "")
                    estimate = estimate_line(run)
                    if estimate:
                        progress.message(estimate)
                        per_cell = per_pending_cell_s(run)  # the live line counts down from it
                        progress.estimate(per_cell[0] if per_cell else None,
                                          sum(1 for cid in run.cell_order if cid not in run.cells))
                INTERRUPT.raise_pending()
            if matrix.distribution.enabled:  # the numerics check's reverse direction (runner/reverse.py)
                reverse_pass(matrix, ENGINES[reference.engine], reference, run, out_dir, progress)
                with INTERRUPT.deferred():
                    refresh_drift(run, out_dir)
                    save()
                INTERRUPT.raise_pending()
            if matrix.confirm is not None and matrix.confirm.enabled:  # the second stage (runner/confirmstage.py)
                run_confirmation(matrix, run, reference, {c.id: c for c in cells}, out_dir, progress, save,
                                 gpu_baseline)
            run.complete = True
        except _SaveFailed:
            pass
        except (KeyboardInterrupt, Interrupted) as exc:
            with INTERRUPT.deferred():  # from here to the exit nothing may interrupt the save
                run.interrupted = True
                exit_status = 128 + (exc.signum if isinstance(exc, Interrupted) else signal.SIGINT)
                progress.message(f"interrupted ({exc or 'SIGINT'}): saved {len(run.cells)} finished cells; "
                                 "--resume finishes the run")
        finally:
            with INTERRUPT.deferred():
                if save_error is None:
                    with contextlib.suppress(_SaveFailed):
                        save()
                progress.close()
    if save_error is not None:
        raise RunError(save_error)
    return run, exit_status
