"""Resume and re-runs never mix what two configurations measured: a cell whose settings changed starts from an empty
folder (the old one kept aside under a name that says why), and no launch appends to an earlier launch's log.

The "engine" here is a Python one-liner that prints a real engine error and exits, so a whole `run` takes a second."""

import json
import sys
from pathlib import Path

import pytest

from evalharness.matrix.schema import Cell, Matrix
from evalharness.matrix.expand import expand
from evalharness.runner.cellfolders import MARKER, set_aside_stale
from evalharness.runner.progress import Progress
from evalharness.runner.run import execute

BAD_ARGUMENT = "print('api_server.py: error: unrecognized arguments: --mamba-scheduler-strategy'); raise SystemExit(2)"
OUT_OF_MEMORY = "print('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB'); raise SystemExit(1)"


def _matrix(script: str) -> tuple[Matrix, list[Cell]]:
    matrix = Matrix(name="t", engine="vllm", model="some/model", command=[sys.executable, "-c", script],
                    timeouts={"startup_s": 30, "teardown_grace_s": 2})
    return matrix, expand(matrix)


def _run(tmp_path: Path, script: str, resume: bool):
    matrix, cells = _matrix(script)
    run, status = execute(matrix, cells, cells[0], tmp_path / "m.yaml", tmp_path / "out", resume, Progress(total=1))
    assert status == 0
    return run, cells[0]


def test_resume_after_a_settings_change_starts_the_cell_from_an_empty_folder(tmp_path):
    """Issue 13.1: the old server.log (an argument error) is not read with the new launch's (an OOM), and the old
    lm-eval request cache (the old configuration's answers) is not in the new cell's folder; both are kept aside."""
    first, cell = _run(tmp_path, BAD_ARGUMENT, resume=False)
    assert first.cells["base"].crash.kind == "bad_argument"
    cache = tmp_path / "out" / "cells" / "base" / "quality" / "eh_copy" / "cache"
    cache.parent.mkdir(parents=True)
    cache.write_text("the previous configuration's answers")

    second, changed = _run(tmp_path, OUT_OF_MEMORY, resume=True)
    assert changed.settings_hash != cell.settings_hash
    result = second.cells["base"]
    assert result.status == "crashed" and result.crash.kind == "out_of_memory", result.reason
    folder = tmp_path / "out" / "cells" / "base"
    assert "unrecognized arguments" not in (folder / "server.log").read_text()
    assert not (folder / "quality").exists()
    stale = tmp_path / "out" / "cells" / f"base.stale-{cell.settings_hash}"
    assert "unrecognized arguments" in (stale / "server.log").read_text()
    assert (stale / "quality" / "eh_copy" / "cache").read_text() == "the previous configuration's answers"
    assert any(f"kept aside as cells/base.stale-{cell.settings_hash}" in note for note in second.notes), second.notes


def test_a_cell_run_again_under_the_same_settings_keeps_its_folder_but_never_its_old_log(tmp_path):
    """Issue 13.1: an interrupted cell resumed with the same settings keeps its request cache (its own answers), but
    its launch starts a fresh server.log: an earlier launch's lines never decide the new crash class."""
    _, [cell] = _matrix(OUT_OF_MEMORY)
    folder = tmp_path / "out" / "cells" / "base"
    (folder / "quality" / "eh_copy").mkdir(parents=True)
    (folder / MARKER).write_text(json.dumps({"cell": "base", "settings_hash": cell.settings_hash}))
    (folder / "quality" / "eh_copy" / "cache").write_text("this configuration's answers")
    (folder / "server.log").write_text("api_server.py: error: unrecognized arguments: --x\n")

    run, _ = _run(tmp_path, OUT_OF_MEMORY, resume=False)
    assert run.cells["base"].crash.kind == "out_of_memory"
    assert "unrecognized arguments" not in (folder / "server.log").read_text()
    assert (folder / "quality" / "eh_copy" / "cache").exists() and not run.notes


CELL = Cell(id="c", axes={}, args={}, env={}, settings_hash="new", engine="vllm")


@pytest.mark.parametrize("marker,recorded,taken,moved_to", [
    ("new", None, [], None),          # same settings (an interrupted cell): kept
    ("old", None, [], "c.stale-old"),  # the marker names other settings
    (None, "old", [], "c.stale-old"),  # no marker (an older harness): results.json's record decides
    (None, None, [], "c.stale-unknown"),  # nothing says what measured it: not trusted
    ("old", None, ["c.stale-old"], "c.stale-old-2"),  # set aside before: never overwritten
])
def test_a_folder_from_other_settings_is_set_aside_under_a_name_that_says_why(tmp_path, marker, recorded, taken,
                                                                              moved_to):
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "server.log").write_text("old")
    if marker:
        (folder / MARKER).write_text(json.dumps({"settings_hash": marker}))
    for name in taken:
        (tmp_path / name).mkdir()
    note = set_aside_stale(tmp_path, CELL, recorded)
    if moved_to is None:
        assert note is None and (folder / "server.log").exists()
    else:
        assert not folder.exists() and (tmp_path / moved_to / "server.log").read_text() == "old"
        assert note.endswith(f"kept aside as cells/{moved_to}, and the cell runs from an empty folder")
