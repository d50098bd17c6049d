"""The Ray runner's parts that need no cluster: shipping a cell folder as bytes, what a cell asks Ray for, the driver's
bookkeeping of lost nodes (against a scripted stand-in for Ray's API), the node guard with real processes, the
report's per-node caveat, and that a run without --ray never imports Ray.

The real cluster, engine and signals are in tests/integration/test_ray_cluster.py."""

import io
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest

from evalharness.matrix.expand import expand
from evalharness.matrix.schema import ClusterSection, Matrix
from evalharness.records.run import CellResult, RunMeta, RunResult
from evalharness.render.report import render_markdown
from evalharness.runner import ray_runner
from evalharness.runner.progress import Progress
from evalharness.runner.ray_cell import OWNER, sweep_dead_scratch
from evalharness.runner.ray_plan import cell_demand, fits, lost_reason, overlap_notes, parallel_gpus
from evalharness.runner.run import open_run
from evalharness.runner.transfer import UnsafeArchive, pack, replace_folder, unpack
from evalharness.serving.processes import MARKER_ENV

REPO = Path(__file__).resolve().parents[3]


# --- shipping folders -------------------------------------------------------------------------------------------

def test_a_folder_goes_and_comes_back_whole_without_its_pid_file(tmp_path):
    src = tmp_path / "src"
    (src / "quality" / "eh_copy").mkdir(parents=True)
    (src / "server.log").write_text("log")
    (src / "server.pid").write_text("{}")
    (src / "quality" / "eh_copy" / "samples.jsonl").write_text("{}\n")
    dest = tmp_path / "dest"
    unpack(pack(src), dest)
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file()) == [
        "quality/eh_copy/samples.jsonl", "server.log"]
    only = tmp_path / "only"
    unpack(pack(src, {"server.log"}), only)
    assert [p.name for p in only.iterdir()] == ["server.log"]
    assert pack(tmp_path / "missing") == b""


@pytest.mark.parametrize("name,kind", [("../escape", tarfile.REGTYPE), ("/abs", tarfile.REGTYPE),
                                       ("link", tarfile.SYMTYPE)])
def test_unpacking_refuses_paths_that_leave_the_folder_and_links(tmp_path, name, kind):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo(name)
        info.type = kind
        info.linkname = "/etc/passwd" if kind == tarfile.SYMTYPE else ""
        tar.addfile(info, io.BytesIO(b""))
    with pytest.raises(UnsafeArchive):
        unpack(buffer.getvalue(), tmp_path / "d")


def test_replace_folder_swaps_the_whole_folder(tmp_path):
    src, folder = tmp_path / "src", tmp_path / "cells" / "c"
    src.mkdir()
    (src / "new.txt").write_text("new")
    folder.mkdir(parents=True)
    (folder / "old.txt").write_text("old")
    replace_folder(pack(src), folder)
    assert [p.name for p in folder.iterdir()] == ["new.txt"]
    assert [p.name for p in folder.parent.iterdir()] == ["c"]  # nothing left beside it


# --- what a cell asks for -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("args,gpus", [
    ({}, 1), ({"--tensor-parallel-size": 8}, 8), ({"-tp": "4"}, 4), ({"--tp-size": 2, "--dp-size": 2}, 4),
    ({"--tp": 2, "--pp-size": 2}, 4), ({"--tensor-parallel-size": True}, 1), ({"--dtype": "bfloat16"}, 1)])
def test_gpus_of_a_cell_are_its_parallel_sizes(args, gpus):
    assert parallel_gpus(args) == gpus


def _cells(**axes):
    matrix = Matrix(name="t", engine="vllm", model="m", command=[sys.executable, "-c", "raise SystemExit(1)"],
                    axes={"tp": {k: {"args": v} for k, v in axes.items()}} if axes else {})
    return matrix, expand(matrix)


def test_cell_demand_defaults_to_the_tensor_parallel_size_and_adds_custom_resources():
    _, cells = _cells(one={"--tensor-parallel-size": 1}, eight={"--tensor-parallel-size": 8})
    by_id = {c.id: c for c in cells}
    assert cell_demand(by_id["tp-eight"], ClusterSection()) == {"GPU": 8.0}
    assert cell_demand(by_id["tp-one"], ClusterSection(gpus_per_cell=0, resources={"eh_node": 1})) == {"eh_node": 1.0}
    assert cell_demand(by_id["tp-one"], ClusterSection(gpus_per_cell=2)) == {"GPU": 2.0}
    assert fits({"GPU": 8.0}, {"GPU": 8.0, "CPU": 64}) and not fits({"GPU": 8.0, "eh_node": 1}, {"GPU": 8.0})


def test_a_cell_asking_ray_for_nothing_is_refused_before_connecting(tmp_path):
    matrix, cells = _cells()
    matrix = matrix.model_copy(update={"cluster": ClusterSection(gpus_per_cell=0)})
    with pytest.raises(ray_runner.RunError, match="would ask Ray for nothing"):
        ray_runner.execute_ray(matrix, cells, cells[0], tmp_path / "m.yaml", tmp_path / "out", False)
    assert not (tmp_path / "out").exists()


def test_the_cluster_section_refuses_unknown_keys():
    with pytest.raises(ValueError, match="gpu_per_cell"):
        ClusterSection.model_validate({"gpu_per_cell": 1})


def _cell(cid, node=None, start="2026-01-01T00:00:00+00:00", end="2026-01-01T00:01:00+00:00", status="ok"):
    return CellResult(id=cid, axes={}, settings_hash="h", args={}, env={}, argv=[], status=status, phase="done",
                      node=node, started_at=start, finished_at=end, duration_s=60)


def _node(node_id, cpu="AMD EPYC", gpu=None):
    return {"ray_node_id": node_id, "hostname": f"host-{node_id}", "ip": "10.0.0.1", "cpu_model": cpu,
            "cpu_flags": [], "gpus": [{"name": gpu, "driver": "550"}] if gpu else []}


def test_cells_that_shared_a_node_at_once_are_noted():
    meta = RunMeta(harness_version="0", engine="vllm", matrix_name="m", matrix_path="m.yaml", started_at="t")
    run = RunResult(meta=meta, reference="a", cell_order=["a", "b", "c"], cells={
        "a": _cell("a", _node("n1")), "b": _cell("b", _node("n1"), "2026-01-01T00:00:30+00:00", "2026-01-01T00:02:00+00:00"),
        "c": _cell("c", _node("n2"))})
    [note] = overlap_notes(run)
    assert "a and b overlapped" in note and "host-n1" in note


def test_report_says_when_cells_ran_on_different_kinds_of_node():
    meta = RunMeta(harness_version="0", engine="vllm", matrix_name="m", matrix_path="m.yaml", started_at="t",
                   machine={"hostname": "driver", "cpu_model": "Xeon"})
    same = RunResult(meta=meta, reference="a", cell_order=["a", "b"], cells={
        "a": _cell("a", _node("n1", gpu="H100")), "b": _cell("b", _node("n2", gpu="H100"))})
    text = render_markdown(same)
    assert "measured on Ray nodes of one kind: 1 x H100 (driver 550)" in text and "## Nodes" in text
    assert "kinds of machine**" not in text
    mixed = same.model_copy(update={"cells": {"a": same.cells["a"], "b": _cell("b", _node("n2", gpu="A100"))}})
    text = render_markdown(mixed)
    assert "**Cells ran on 2 kinds of machine**" in text and "Ray nodes of several kinds" in text
    assert "measured on Xeon" not in text


def test_the_gate_compares_the_machine_that_measured_the_cells_not_the_driver():
    from evalharness.analysis.gate import machine_warning, measured_on
    from evalharness.records.baseline import Baseline, Thresholds

    meta = RunMeta(harness_version="0", engine="vllm", matrix_name="m", matrix_path="m.yaml", started_at="t",
                   machine={"hostname": "login", "cpu_model": "Xeon"})
    run = RunResult(meta=meta, reference="a", cell_order=["a"], cells={"a": _cell("a", _node("n1", gpu="H100"))})
    assert measured_on(run, ["a"])["ray_node_id"] == "n1"
    baseline = Baseline(created="t", matrix_name="m", harness_version="0", engine="vllm", thresholds=Thresholds(),
                        machine=_node("n9", gpu="H100"), cells={})
    assert machine_warning(run, baseline) is None
    assert "another kind of machine" in machine_warning(run, baseline.model_copy(update={"machine": meta.machine}))


def test_a_lost_reason_keeps_rays_first_sentences_not_its_advice():
    exc = _NodeDied("Task failed because the node it was running on is dead or unavailable. Node IP: 10.0.0.2, node "
                    "ID: abc. This can happen if the node was preempted. To see node death information, use `ray`")
    assert lost_reason(exc) == ("_NodeDied: Task failed because the node it was running on is dead or unavailable. "
                                "Node IP: 10.0.0.2, node ID: abc")


# --- the driver's bookkeeping, against a scripted Ray -------------------------------------------------------------

class _RayError(Exception):
    pass


class _NodeDied(_RayError):
    pass


class _TaskError(_RayError):
    def __init__(self, cause):
        super().__init__(str(cause))
        self.cause = cause


class FakeRay:
    """Runs each submitted cell at once from a script: per cell id, a list of outcomes, one per attempt ('ok' or
    an exception to raise from ray.get)."""

    exceptions = SimpleNamespace(TaskCancelledError=type("TaskCancelled", (_RayError,), {}), RayTaskError=_TaskError,
                                 RayError=_RayError)

    def __init__(self, script):
        self.script = script
        self.submitted: list[tuple[str, dict]] = []
        self.outcomes: dict[int, object] = {}

    def remote(self, fn):
        fake = self

        class Remote:
            def options(self, **kw):
                return SimpleNamespace(remote=lambda *args: fake._submit(args, kw))
        return Remote()

    def _submit(self, args, options):
        cell = args[1]
        attempt = sum(1 for cid, _ in self.submitted if cid == cell["id"])
        self.submitted.append((cell["id"], options))
        ref = len(self.outcomes)
        self.outcomes[ref] = self.script[cell["id"]][attempt], cell
        return ref

    def put(self, value):
        return value

    def wait(self, refs, num_returns=1, timeout=None):
        return refs[:num_returns], refs[num_returns:]

    def get(self, ref):
        outcome, cell = self.outcomes[ref]
        if isinstance(outcome, BaseException):
            raise outcome
        result = _cell(cell["id"], _node("n1"), f"2026-01-01T00:{ref:02d}:00+00:00", f"2026-01-01T00:{ref:02d}:30+00:00")
        return {"result": result.model_dump(mode="json"), "node": result.node, "notes": [], "folder": b""}

    def nodes(self):
        return [{"Alive": True, "Resources": {"GPU": 1.0}}]

    def cancel(self, ref, force=False):
        pass


def _drive(tmp_path, script, max_retries):
    matrix, cells = _cells(a={"--tp": 1}, b={"--tp": 1})
    out = tmp_path / "out"
    run = open_run(matrix, cells, cells[0], tmp_path / "m.yaml", out, False)
    fake = FakeRay(script)
    demands = {c.id: cell_demand(c, ClusterSection()) for c in cells}
    run, status = ray_runner._drive(fake, matrix, cells, cells[0], out, run, demands, max_retries, Progress(total=2))
    return run, status, fake


def test_a_lost_node_submits_the_cell_again_with_a_note(tmp_path):
    run, status, fake = _drive(tmp_path, {"tp-a": ["ok"], "tp-b": [_NodeDied("node 1 died\nmore"), "ok"]}, 2)
    assert status == 0 and run.complete
    assert [cid for cid, _ in fake.submitted] == ["tp-a", "tp-b", "tp-b"]
    assert fake.submitted[0][1]["num_gpus"] == 1.0 and fake.submitted[0][1]["max_retries"] == 0
    assert run.cells["tp-b"].status == "ok"
    assert run.notes == ["tp-b: attempt 1 lost: _NodeDied: node 1 died; submitted again (attempt 2 of 3)"]
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert saved["complete"] is True and saved["cells"]["tp-b"]["node"]["ray_node_id"] == "n1"


def test_a_cell_lost_more_often_than_allowed_is_an_error_with_the_reason(tmp_path):
    run, status, fake = _drive(tmp_path, {"tp-a": ["ok"], "tp-b": [_NodeDied("gone"), _NodeDied("gone again")]}, 1)
    assert status == 0 and run.complete
    cell = run.cells["tp-b"]
    assert cell.status == "error" and cell.phase == "ray"
    assert cell.reason == "lost its node or worker 2 time(s) (cluster.max_retries 1); last: _NodeDied: gone again"
    assert "| `tp-b` | **error** | ray |" in (tmp_path / "out" / "report.md").read_text()


def test_a_bug_in_a_task_is_that_cell_s_error_and_no_retry(tmp_path):
    run, _, fake = _drive(tmp_path, {"tp-a": ["ok"], "tp-b": [_TaskError(ValueError("boom"))]}, 2)
    assert [cid for cid, _ in fake.submitted] == ["tp-a", "tp-b"]
    assert run.cells["tp-b"].status == "error" and "boom" in run.cells["tp-b"].reason


def test_a_worker_without_the_harness_stops_the_run(tmp_path):
    with pytest.raises(ray_runner.RunError, match="install evalharness"):
        _drive(tmp_path, {"tp-a": [_TaskError(ModuleNotFoundError("No module named 'evalharness'"))]}, 2)


class NodeRay:
    """Runs the reverse task's driver side: records what was submitted and answers as a node would, with each shipped
    cell's samples scored (copied) and the reference's log; or raises `failure` from get."""

    exceptions = FakeRay.exceptions

    def __init__(self, failure: BaseException | None = None):
        self.failure, self.submitted = failure, []

    def remote(self, fn):
        fake = self

        class Remote:
            def options(self, **kw):
                return SimpleNamespace(remote=lambda *args: fake.submitted.append((fn.__name__, kw, args)) or "ref")
        return Remote()

    def wait(self, refs, num_returns=1, timeout=None):
        return refs[:num_returns], refs[num_returns:]

    def get(self, ref):
        if self.failure:
            raise self.failure
        scores = {}
        for cid, data in self.submitted[-1][2][2].items():
            unpack(data, self.tmp / cid)
            (self.tmp / cid / "own_samples.jsonl").rename(self.tmp / cid / "reverse_scored.jsonl")
            scores[cid] = pack(self.tmp / cid, {"reverse_scored.jsonl"})
        (self.tmp / "ref").mkdir()
        (self.tmp / "ref" / "reverse-server.log").write_text("served")
        return {"scores": scores, "log": pack(self.tmp / "ref"), "note": "numerics check: served again (on host-n1)",
                "notes": [], "node": _node("n1")}


def _reverse_run(tmp_path):
    from evalharness.records.cellfiles import save_scored
    from tests.unit.phases.test_numerics import _scored

    matrix, cells = _cells(a={"--tp": 1}, b={"--tp": 1}, c={"--tp": 1})
    out = tmp_path / "out"
    run = open_run(matrix, cells, cells[0], tmp_path / "m.yaml", out, False)
    run.cells.update({c.id: _cell(c.id, _node("n1"), status="crashed" if c.id == "tp-c" else "ok") for c in cells})
    for c in cells[1:]:
        (out / "cells" / c.id).mkdir(parents=True)
        save_scored(out / "cells" / c.id / "own_samples.jsonl", [_scored("s0", [5, 6], [-0.5, -1.0], prompt_ids=[1])])
        (out / "cells" / c.id / "server.log").write_text("not shipped")
    return matrix, cells, out, run


def test_on_ray_the_reverse_direction_is_one_more_task_that_brings_the_scores_back(tmp_path):
    matrix, cells, out, run = _reverse_run(tmp_path)
    fake = NodeRay()
    fake.tmp = tmp_path / "node"
    ray_runner._reverse_on_a_node(fake, matrix, cells[0], run, out, {"GPU": 1.0}, Progress(total=3))
    [(name, options, (_, reference, shipped))] = fake.submitted
    assert name == "reverse_task" and reference["id"] == "tp-a"
    assert options["num_gpus"] == 1.0 and options["max_retries"] == 0 and options["name"].endswith(":reverse")
    assert sorted(shipped) == ["tp-b"]  # a crashed cell's samples are not scored
    unpack(shipped["tp-b"], tmp_path / "seen")
    assert [p.name for p in (tmp_path / "seen").rglob("*")] == ["own_samples.jsonl"]  # nothing else travels
    assert (out / "cells" / "tp-b" / "reverse_scored.jsonl").exists()
    assert (out / "cells" / "tp-a" / "reverse-server.log").exists()
    assert run.notes[-1] == "numerics check: served again (on host-n1)"
    assert "served again" in json.loads((out / "results.json").read_text())["notes"][-1]
    ray_runner._reverse_on_a_node(fake, matrix, cells[0], run, out, {"GPU": 1.0}, Progress(total=3))
    assert len(fake.submitted) == 1  # a finished pass is not submitted again (a resumed run)


def test_on_ray_a_failed_reverse_task_is_a_note_and_resume_tries_again(tmp_path):
    matrix, cells, out, run = _reverse_run(tmp_path)
    fake = NodeRay(failure=_NodeDied("node 2 died\nmore"))
    ray_runner._reverse_on_a_node(fake, matrix, cells[0], run, out, {"GPU": 1.0}, Progress(total=3))
    assert "failed (_NodeDied: node 2 died)" in run.notes[-1] and "--resume tries again" in run.notes[-1]
    assert not (out / "cells" / "tp-b" / "reverse_scored.jsonl").exists()
    assert all(c.status != "error" for c in run.cells.values() if c.id != "tp-c")


# --- the node guard -----------------------------------------------------------------------------------------------

def _fake_server(folder: Path, marker: str) -> subprocess.Popen:
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True,
                              env={**os.environ, MARKER_ENV: marker})
    pid_file = folder / "run" / "cells" / "c" / "server.pid"
    pid_file.parent.mkdir(parents=True)
    pid_file.write_text(json.dumps({"pid": server.pid, "create_time": psutil.Process(server.pid).create_time(),
                                    "marker": marker}))
    return server


def test_the_guard_kills_the_server_of_a_worker_killed_outright(tmp_path):
    folder = tmp_path / "scratch"
    server = _fake_server(folder, "m1")
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    guard = subprocess.Popen([sys.executable, "-m", "evalharness.runner.nodeguard", str(owner.pid),
                              str(psutil.Process(owner.pid).create_time()), str(folder)], cwd=REPO,
                             start_new_session=True)
    time.sleep(0.1)
    assert guard.poll() is None and server.poll() is None  # the worker lives: the guard waits
    owner.kill()
    owner.wait()
    assert guard.wait(timeout=60) == 0
    assert server.wait(timeout=30) is not None and not folder.exists()


def test_a_task_sweeps_scratch_folders_whose_worker_is_gone(tmp_path):
    dead, alive = tmp_path / "root" / "dead", tmp_path / "root" / "alive"
    server = _fake_server(dead, "m2")
    (dead / OWNER).write_text(json.dumps({"pid": 2**22 + 7, "create_time": 0}))
    alive.mkdir(parents=True)
    me = psutil.Process()
    (alive / OWNER).write_text(json.dumps({"pid": me.pid, "create_time": me.create_time()}))
    found = sweep_dead_scratch(tmp_path / "root")
    assert len(found) == 1 and "killed 1 engine processes" in found[0]
    assert server.wait(timeout=30) is not None
    assert not dead.exists() and alive.exists()


# --- without --ray, no Ray ----------------------------------------------------------------------------------------

def test_a_run_without_ray_never_imports_it(tmp_path):
    matrix = tmp_path / "m.yaml"
    matrix.write_text("name: t\nengine: external\nmodel: m\nbase_url: http://127.0.0.1:9/v1\n"
                      "timeouts: {startup_s: 0.5}\n")
    code = ("import sys; from evalharness.cli import main; rc = main(['run', '--matrix', sys.argv[1], '--out', "
            "sys.argv[2]]); print('RAY' if any(m == 'ray' or m.startswith('ray.') for m in sys.modules) else 'NO', rc)")
    out = subprocess.run([sys.executable, "-c", code, str(matrix), str(tmp_path / "out")], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert out.stdout.split()[-2:] == ["NO", "0"], out.stderr
    assert json.loads((tmp_path / "out" / "results.json").read_text())["cells"]["base"]["status"] == "timeout"


def test_the_reference_ships_its_samples_to_the_nodes_but_not_its_request_caches(tmp_path):
    from evalharness.runner.transfer import pack, unpack

    ref = tmp_path / "ref"
    for rel in ("probes.jsonl", "server.log", "quality/t/samples.jsonl", "quality/t/cache/requests.db",
                "quality/t/repeat-1/samples.jsonl"):
        (ref / rel).parent.mkdir(parents=True, exist_ok=True)
        (ref / rel).write_text(rel)
    unpack(pack(ref, {"probes.jsonl"}, {"samples.jsonl"}), tmp_path / "node")
    shipped = sorted(str(p.relative_to(tmp_path / "node")) for p in (tmp_path / "node").rglob("*") if p.is_file())
    assert shipped == ["probes.jsonl", "quality/t/repeat-1/samples.jsonl", "quality/t/samples.jsonl"]


# --- the second stage on a cluster (issue 61, 7) -------------------------------------------------------------------

def test_every_confirmation_launch_runs_on_the_node_of_the_first(tmp_path):
    from evalharness.runner.ray_confirm import ray_launcher

    node = "ab" * 28  # Ray's node ids are hex

    class OneNodeRay(FakeRay):
        def get(self, ref):
            payload = super().get(ref)
            return {**payload, "node": {**payload["node"], "ray_node_id": node}}

    matrix, cells = _cells(a={"--tp": 1}, b={"--tp": 1})
    fake = OneNodeRay({"tp-a.confirm-1-1": ["ok"], "tp-b.confirm-1-1": ["ok"], "tp-a.confirm-1-2": ["ok"]})
    demands = {c.id: cell_demand(c, ClusterSection()) for c in cells}
    launch = ray_launcher(fake, cells[0], tmp_path, demands, ray_runner._error_result, lambda ref: None)
    for cid in ("tp-a.confirm-1-1", "tp-b.confirm-1-1", "tp-a.confirm-1-2"):
        base = next(c for c in cells if cid.startswith(c.id))
        assert launch(matrix, base.model_copy(update={"id": cid})).status == "ok"
    first, *later = [options for _, options in fake.submitted]
    assert "scheduling_strategy" not in first and first["num_gpus"] == 1.0  # what its cell asked for, anywhere
    assert [o["scheduling_strategy"].node_id for o in later] == [node, node]  # then where the first ran
    assert all(not o["scheduling_strategy"].soft for o in later)
