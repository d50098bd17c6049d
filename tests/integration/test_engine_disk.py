"""The output folder's disk fills while a cell runs on the real engine: the run stops with a clear error, the engine
is torn down, and results.json keeps the last good save, never a half-written or falsely complete one.

The full disk is a small tmpfs (mounting one needs root, as CI has here; elsewhere the test fails and says so)."""

import contextlib
import json
import subprocess
import time

import pytest

from tests.integration.conftest import HARNESS, REPO, behind_proxy, engine_processes, matrix_yaml, served_by

pytestmark = [pytest.mark.engine, pytest.mark.timeout(1800)]  # a safety limit, about 3x a 2-core machine's time


@contextlib.contextmanager
def tmpfs(folder, options):
    """A tmpfs mounted on `folder` for the duration (mounting needs root; without it the test fails and says so)."""
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True,
                             text=True)
    if mounted.returncode != 0:
        pytest.fail(f"this test mounts a tmpfs ({options}) and needs root for that: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.fixture()
def small_disk(tmp_path):
    with tmpfs(tmp_path / "disk", "size=8m") as disk:
        yield disk


def _fill(folder):
    """Write until the disk says no more."""
    with open(folder / "filler", "wb") as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
        except OSError:
            pass


def test_a_full_disk_stops_the_run_cleanly_and_keeps_the_last_good_save(engine, shared_engine, small_disk, tmp_path):
    matrix = tmp_path / "m.yaml"
    # the reference is the session's engine behind a proxy (conftest.served_by); the disk fills while the second
    # cell starts an engine of its own, which must be torn down
    matrix.write_text(matrix_yaml(engine, {"f32": served_by(shared_engine), "bf16": "{args: {--dtype: bfloat16}}"},
                                  extra="distribution: {enabled: false}\n", command=behind_proxy(engine)))
    out = small_disk / "out"
    proc = subprocess.Popen([*HARNESS, "run", "--matrix", str(matrix), "--out", str(out)], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if "cell-bf16: startup" in line:  # the reference is saved; the second cell is starting
            _fill(small_disk)
            break
    lines += proc.stdout.read().splitlines(keepends=True)
    code = proc.wait(timeout=900)
    log = "".join(lines)
    assert code == 2, log[-3000:]
    assert "cannot save the results in" in log and "No space left on device" in log
    assert "results.json still holds the last good save (1 finished cells, not marked complete)" in log
    assert engine_processes() == []
    saved = json.loads((out / "results.json").read_text())
    assert saved["complete"] is False and list(saved["cells"]) == ["cell-f32"]
    assert saved["cells"]["cell-f32"]["status"] == "ok"
    assert not list(out.glob(".*.tmp")), "a temporary file was left behind"
    # with the space back, --resume finishes the run from there
    (small_disk / "filler").unlink()
    time.sleep(0.5)
    done = subprocess.run([*HARNESS, "run", "--matrix", str(matrix), "--out", str(out), "--resume"], cwd=REPO,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    final = json.loads((out / "results.json").read_text())
    assert final["complete"] is True and final["cells"]["cell-bf16"]["status"] == "ok"
    assert engine_processes() == []


def test_a_read_only_output_folder_is_refused_before_any_launch(engine, tmp_path):
    matrix = tmp_path / "m.yaml"
    matrix.write_text(matrix_yaml(engine, {"f32": "{args: {--dtype: float32}}"}))
    with tmpfs(tmp_path / "ro", "ro,size=1m") as disk:
        proc = subprocess.run([*HARNESS, "run", "--matrix", str(matrix), "--out", str(disk / "out")], cwd=REPO,
                              capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "cannot create the output folder" in proc.stderr
    assert "Read-only file system" in proc.stderr and engine_processes() == []
