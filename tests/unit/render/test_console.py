"""The console (issue 58, 7): progress lines that do not wrap, an estimate of what is left from the cells' own times,
and the run's end: the verdict box and the cells' status table."""

import io

from rich.console import Console

from evalharness.analysis.timing import estimate_line, remaining_s
from evalharness.records.run import CellResult, RunMeta, RunResult
from evalharness.render.console import status_table
from evalharness.runner.progress import Progress


def _cell(cid: str, duration: float, status: str = "ok", reason: str | None = None) -> CellResult:
    return CellResult(id=cid, axes={}, settings_hash="h", args={}, env={}, argv=[], status=status, reason=reason,
                      phase="done", started_at="t", finished_at="t", duration_s=duration)


def _run(cells: list[CellResult], order: list[str]) -> RunResult:
    meta = RunMeta(harness_version="0", engine="vllm", matrix_name="m", matrix_path="m.yaml", started_at="t")
    return RunResult(meta=meta, reference=order[0], cell_order=order, cells={c.id: c for c in cells})


def test_the_estimate_says_what_is_left_from_the_cells_own_times_not_the_reference_s():
    """The demo's console said "28 minutes" with two 20-second cells left: the reference, which measures more than
    any other cell, stood in for every cell still to run, and the line gave the whole matrix, read as what is left."""
    run = _run([_cell("ref", 1500.0), _cell("a", 20.0), _cell("b", 22.0), _cell("c", 18.0, "crashed")],
               ["ref", "a", "b", "c", "d", "e"])
    assert remaining_s(run) == 2 * 21.0  # the median of the finished ok cells other than the reference
    line = estimate_line(run)
    assert "about 1 min left for 2 cells (21 s each, the median of 2 finished cells)" in line, line
    only_reference = _run([_cell("ref", 600.0)], ["ref", "a"])
    assert "about 10 min left for 1 cell (the reference's 600 s)" in estimate_line(only_reference)
    assert "all cells done" in estimate_line(_run([_cell("ref", 60.0), _cell("a", 20.0)], ["ref", "a"]))


def test_progress_lines_off_a_terminal_do_not_wrap():
    """The demo's CI log broke "throughput:load-c1 (cell\\n109s)": rich wraps at 80 columns where it sees no
    terminal. Each event is one line however long."""
    out = io.StringIO()
    progress = Progress(total=6, console=Console(file=out, width=40, force_terminal=False))
    cell = "dtype-float32.spec-off.compile-compiled.fault-none"
    progress.cell(2, cell)
    progress.phase("throughput:load-c1")
    progress.finished(cell, "crashed", "the server exited with status 1 before it was ready: " + "x" * 60)
    progress.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 3, lines
    assert lines[1] == f"[2/6] {cell}: throughput:load-c1 (cell 0s)"


def test_the_live_line_fits_the_terminal_and_counts_down():
    out = io.StringIO()
    progress = Progress(total=6, console=Console(file=out, width=60, force_terminal=True))
    try:
        progress.estimate(120.0, 3)
        progress.cell(4, "dtype-float32.spec-off.compile-compiled.fault-none")
        progress.phase("quality:eh_capitals")
        text = progress.__rich__()
        assert "about 6 min left" in text.plain  # 2 cells after this one at 2 min each, and this one's 2 min
        assert len(progress.console.render_lines(text, progress.console.options)) == 1  # cut, not wrapped
    finally:
        progress.close()


def test_the_status_table_names_each_cell_and_why_it_did_not_finish():
    run = _run([_cell("ref", 90.0), _cell("a", 30.0, "crashed", "engine exited:\x1b[31m CUDA error\n" + "y" * 200)],
               ["ref", "a", "b"])
    lines = status_table(run)
    assert lines[0].split() == ["cell", "status", "min", "why"]
    body = "\n".join(lines[2:])
    assert "ref" in body and "1.5" in body and "pending" in body
    crashed = next(line for line in lines if line.startswith("a "))
    assert "engine exited: [31m CUDA error" in crashed and "\x1b" not in crashed and crashed.endswith("…")
    assert max(len(line) for line in lines) <= 120


def test_the_estimate_says_a_second_stage_follows_and_that_it_is_not_counted():
    """With a `confirm` section the run ends with the finalist's and the reference's fresh launches (issue 61): the
    line says so, not a whole-run time that leaves them out silently; once the stage has begun it says nothing."""
    run = _run([_cell("ref", 160.0), _cell("a", 100.0)], ["ref", "a", "b"])
    run.meta.matrix = {"confirm": {"launches": 2}}
    assert estimate_line(run).endswith("; then confirmation: 4 launches a try, not in the estimate")
    run.meta.matrix = {"confirm": {"launches": 2, "enabled": False}}
    assert "confirmation" not in estimate_line(run)
    run.meta.matrix = {}
    assert "confirmation" not in estimate_line(run)
