"""`evalharness compare` on two real runs of a two-cell matrix on the embedded engine, the second run with one cell's
dtype changed (float32 -> bfloat16), the way a pull request changes one setting: the changed cell shows its settings
change with its accuracy paired per sample across the runs (interval, McNemar p, flips); the cell rerun unchanged
reads as unchanged within noise. Both runs are real runs of every cell (the unchanged cell is measured twice), so the
noise in it is the engine's own. The unchanged cell is the session's float32 engine behind a proxy without faults
(conftest.served_by): two engine starts fewer; the changed cell starts its own engine in both runs."""

import json

import pytest

from tests.integration.conftest import behind_proxy, engine_processes, matrix_yaml, run_harness, served_by

pytestmark = [pytest.mark.engine, pytest.mark.timeout(1800)]  # a safety limit, several times a 2-core machine's time

EXTRA = ("probes: {max_tokens: 16}\n"
         "distribution: {enabled: false}\n"
         "quality: {tasks: [eh_arithmetic], limit: 20, subset: first, full_quality: true}\n"  # every document in both runs
         # watch_host false: a served_by cell answers from the session's engine, not the harness's child
         "throughput: {watch_host: false, scenarios: [{name: single, concurrency: 1, input_len: 32, output_len: 16, "
         "requests: 2, warmup_requests: 1}]}\n"
         "gate: {max_accuracy_drop: 0.05, hard_accuracy_drop: 0.2, alpha: 0.05}\n")


@pytest.fixture(scope="module")
def two_runs(engine, shared_engine, tmp_path_factory):
    folder = tmp_path_factory.mktemp("compare")
    runs = {}
    for name, dtype in (("base", "float32"), ("head", "bfloat16")):
        matrix = folder / f"{name}.yaml"
        matrix.write_text(matrix_yaml(engine, {"a": served_by(shared_engine), "b": f"{{args: {{--dtype: {dtype}}}}}"},
                                      extra=EXTRA, command=behind_proxy(engine)))
        proc = run_harness("run", "--matrix", str(matrix), "--out", str(folder / name), timeout=1500)
        assert proc.returncode == 0, proc.stderr
        assert engine_processes() == []
        results = json.loads((folder / name / "results.json").read_text())
        assert [c["teardown"]["leftover"] for c in results["cells"].values()] == [[], []]
        runs[name] = folder / name
    return runs["base"], runs["head"], folder


def test_the_changed_cell_shows_its_paired_change_and_the_rerun_cell_is_unchanged(two_runs):
    base, head, folder = two_runs
    out = folder / "cmp"
    proc = run_harness("compare", str(base), str(head), "--out", str(out), "--markdown", str(folder / "comment.md"),
                       timeout=300)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr  # 1 only if bf16 really lost answers credibly
    assert "Traceback" not in proc.stderr
    cmp = json.loads((out / "compare.json").read_text())
    cells = {c["cell"]: c for c in cmp["cells"]}
    a, b = cells["cell-a"], cells["cell-b"]
    assert b["settings_changed"] and [(d["key"], d["reference"], d["cell"]) for d in b["launch"]] == [
        ("--dtype", "float32", "bfloat16")]
    assert b["verdict"] in ("differs", "changed", "fails")
    assert b["accuracy"]["paired"] == 20 and b["accuracy"]["ci_low"] <= b["accuracy"]["accuracy_delta"]
    assert a["verdict"] == "same" and not a["settings_changed"]
    assert a["accuracy"]["paired"] == 20 and a["accuracy"]["p_value"] >= 0.05
    assert a["accuracy"]["agreement"]["total"] == 12  # the probes answered again, compared across the runs
    assert [s["name"] for s in a["scenarios"]] == ["single"] and a["scenarios"][0]["ratio"] > 0
    comment = (folder / "comment.md").read_text()
    head_part, details = comment.split("<details>")
    line = next(line for line in head_part.splitlines() if line.startswith("- `cell-b`"))
    assert "--dtype float32 → bfloat16" in line and "on 20 paired samples" in line and "r→w" in line
    assert "- `cell-a` unchanged within noise" in details
    assert (out / "compare.png").stat().st_size > 10_000
    print(comment)  # the rendered short form, for the note (pytest -s)


def test_comparing_a_run_with_itself_and_across_matrices(two_runs):
    base, head, folder = two_runs
    proc = run_harness("compare", str(base), str(base), timeout=300)
    assert proc.returncode == 0 and "2 unchanged within noise" in proc.stdout, proc.stdout + proc.stderr
    other = folder / "other"
    other.mkdir()
    results = json.loads((head / "results.json").read_text())
    results["meta"]["matrix_name"] = "another"
    (other / "results.json").write_text(json.dumps(results))
    proc = run_harness("compare", str(base), str(other), timeout=300)
    assert proc.returncode == 2 and "compare two runs of one matrix" in proc.stderr
    assert proc.stderr.count("\n") == 1
