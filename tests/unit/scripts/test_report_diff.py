"""scripts/report_diff.py: a recorded run re-rendered by two versions of the code (issue 59, 6), on a clone of this
repository, so both sides are real trees: the same code renders the same, and a change to a rendered word is named
with its file and line."""

import subprocess
import sys
from pathlib import Path

from evalharness.records.io import save_run
from evalharness.records.run import CellResult, RunMeta, RunResult

ROOT = Path(__file__).resolve().parents[3]


def recorded_run(folder: Path) -> Path:
    cells = {cid: CellResult(id=cid, axes={"dtype": cid}, settings_hash=cid, args={}, env={}, argv=["serve"],
                             status=status, phase="done" if status == "ok" else "startup", started_at="t",
                             finished_at="t", duration_s=1.0, reason=reason)
             for cid, status, reason in (("f32", "ok", None), ("fp8", "crashed", "unsupported_kernel: no fp8"))}
    meta = RunMeta(harness_version="0.1.0", engine="vllm", matrix_name="dtypes", matrix_path="m.yaml",
                   started_at="t", machine={"hostname": "h", "cpus": 2, "memory_gib": 24})
    save_run(RunResult(meta=meta, reference="f32", cell_order=list(cells), cells=cells), folder)
    return folder


def report_diff(clone: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(clone / "scripts" / "report_diff.py"), *args], capture_output=True,
                          text=True, timeout=300)


def test_the_same_code_renders_the_same_and_a_changed_word_is_named(tmp_path):
    run = recorded_run(tmp_path / "run")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=120)

    same = report_diff(clone, "HEAD", str(run))
    assert same.returncode == 0, same.stdout + same.stderr
    assert "1 of 1 run(s) render the same" in same.stdout

    renderer = clone / "evalharness" / "render" / "report.py"
    source = renderer.read_text()
    assert source.count('"### evalharness: ') == 1
    renderer.write_text(source.replace('"### evalharness: ', '"### evalharness run: '))
    changed = report_diff(clone, "HEAD", str(run))
    assert changed.returncode == 1, changed.stdout + changed.stderr
    assert "summary.md differs" in changed.stdout and "+### evalharness run: dtypes" in changed.stdout
    assert "-### evalharness: dtypes" in changed.stdout
    assert sorted(p.name for p in run.iterdir()) == ["results.json"]  # the run's own files are never written


def test_a_folder_without_a_run_or_an_unknown_ref_is_refused_with_exit_2(tmp_path):
    no_run = report_diff(ROOT, "HEAD", str(tmp_path))
    assert no_run.returncode == 2 and "no results.json; expected a run folder" in no_run.stderr
    bad_ref = report_diff(ROOT, "no-such-ref", str(recorded_run(tmp_path / "run")))
    assert bad_ref.returncode == 2 and "no-such-ref: not a ref of" in bad_ref.stderr


def test_keys_moved_are_told_apart_from_content_changed(tmp_path):
    """Two renderings whose results.json differ only in where a record is kept (a cell's `quality_alone` before
    batching owned it) are the same run when read; one whose content changed is named as a difference."""
    import importlib.util
    import json

    spec = importlib.util.spec_from_file_location("report_diff", ROOT / "scripts" / "report_diff.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    score = {"task": "eh_capitals", "metric": "exact_match", "value": 1.0, "n": 20}
    folders = {}
    for name in ("old", "new", "changed"):
        folders[name] = recorded_run(tmp_path / name)
        data = json.loads((folders[name] / "results.json").read_text())
        record = {"concurrency": 8, "max_tokens": 32, "answers": []}
        cell = data["cells"]["f32"]
        if name == "old":  # the layout a run saved before the move kept
            cell["measures"] = {"batching": record}
            cell["quality_alone"] = [score]
        else:
            cell["measures"] = {"batching": {**record, "alone": [score] if name == "new" else []}}
        (folders[name] / "results.json").write_text(json.dumps(data))
    found, moved = module.differences(folders["old"], folders["new"], ROOT)
    assert found == [] and moved == ["results.json: keys moved, the same run when read by the after tree"]
    found, moved = module.differences(folders["old"], folders["changed"], ROOT)
    assert moved == [] and len(found) == 1 and found[0].startswith("results.json differs:")
