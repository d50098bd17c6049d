"""`run --ray` on a private Ray cluster of this machine (tests/integration/raycluster.py: a head without GPUs and two
nodes of one logical GPU each) with the real embedded engine, as one story on one three-cell matrix:

1. a Ray run, interrupted with SIGINT once the reference is recorded and the two other cells' servers run at the same
   time on the two nodes: exit 130, no engine process left, the reference kept;
2. `--resume --ray`: while both cells run, the node of one of them is lost (its Ray processes SIGKILLed, the engine
   left to the node guard): that cell is submitted again, runs on the other node, and the run completes, with a note;
   no engine process is left;
3. `--resume` without Ray of a copy of the run after step 1: the same matrix run sequentially; its folder, results and
   report have the same shape as the Ray run's.

Engines start in about 40 s here (60 s without AVX-512); the module takes about six minutes on 2 cores. Deadlines are
for broken set-ups, never outcomes.
"""

import json
import os
import shutil
import signal
import subprocess
import time

import psutil
import pytest

from evalharness.serving.processes import MARKER_ENV
from tests.integration.conftest import HARNESS, REPO, SHORT_CONTEXTS, engine_processes, matrix_yaml
from tests.integration.raycluster import PrivateRayCluster

pytestmark = [pytest.mark.engine, pytest.mark.timeout(1800)]

CELLS = {"ref": "{args: {--dtype: float32}}", "b": "{args: {--dtype: float32, --max-num-seqs: 8}}",
         "c": "{args: {--dtype: float32, --max-num-seqs: 4}}"}
# the story is Ray's, not the phases': short probe answers and a numerics check of a few positions (whose contexts
# still travel from the reference to the nodes), about 25 s less per cell here
EXTRA = f"probes: {{max_tokens: 16}}\ndistribution: {{prompts: {json.dumps(str(SHORT_CONTEXTS))}, max_tokens: 8}}\n"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ray")
    # the nodes' workers import the harness of this checkout; RAY_ADDRESS of the caller must not reach them
    made = PrivateRayCluster(folder, env={"PYTHONPATH": str(REPO)}).start(gpu_nodes=2)
    try:
        yield made
    finally:
        made.stop()


@pytest.fixture(scope="module")
def story(engine, cluster, tmp_path_factory):
    return {"folder": tmp_path_factory.mktemp("story"), "engine": engine}


def _harness(cluster, *args, **kw):
    return subprocess.Popen([*HARNESS, *args], cwd=REPO, env={**cluster.env, "PYTHONUNBUFFERED": "1"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def _servers() -> dict[str, psutil.Process]:
    """The live engine launchers (the process carrying the marker whose parent does not), by cell: b or c."""
    found = {}
    for proc in engine_processes():
        try:
            cmd = " ".join(proc.cmdline())
            if MARKER_ENV in proc.environ() and MARKER_ENV not in psutil.Process(proc.ppid()).environ():
                found["b" if "--max-num-seqs 8" in cmd else "c" if "--max-num-seqs 4" in cmd else "ref"] = proc
        except psutil.Error:
            continue
    return found


def _serving(proc: psutil.Process) -> bool:
    try:
        return any("EngineCor" in child.name() for child in proc.children(recursive=True))
    except psutil.Error:
        return False


def _wait_both_serving(harness, deadline_s: float = 900) -> dict[str, psutil.Process]:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        assert harness.poll() is None, harness.communicate()
        servers = _servers()
        if all(k in servers and _serving(servers[k]) for k in ("b", "c")):
            return servers
        time.sleep(0.5)
    harness.send_signal(signal.SIGINT)
    pytest.fail("cells b and c never had their servers up at the same time")


def _cell_processes() -> set[int]:
    """Pids of what cells started: the engines' families and the node guards."""
    spared = set()
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if "evalharness.runner.nodeguard" in " ".join(proc.info["cmdline"] or []):
                spared.add(proc.pid)
        except psutil.Error:
            continue
    for launcher in _servers().values():
        try:
            spared |= {launcher.pid, *(c.pid for c in launcher.children(recursive=True))}
        except psutil.Error:
            continue
    return spared


def _node_of(cluster, proc: psutil.Process):
    for node in cluster.nodes:
        node.remember()
        if proc.pid in node.seen:
            return node
    return None


def test_interrupt_cancels_every_task_and_leaves_no_engine(story, cluster):
    folder = story["folder"]
    matrix = folder / "m.yaml"
    matrix.write_text(matrix_yaml(story["engine"], CELLS, extra=EXTRA))
    out = folder / "out"
    harness = _harness(cluster, "run", "--matrix", str(matrix), "--out", str(out), "--ray", cluster.address)
    servers = _wait_both_serving(harness)
    # the reference ran first and alone; the other two now run at once, each on a node of its own
    assert json.loads((out / "results.json").read_text())["cells"].keys() == {"cell-ref"}
    nodes = {_node_of(cluster, servers[k]).name for k in ("b", "c")}
    assert nodes == {"gpu0", "gpu1"}
    harness.send_signal(signal.SIGINT)
    _, err = harness.communicate(timeout=600)
    assert harness.returncode == 130, err
    assert engine_processes() == []
    results = json.loads((out / "results.json").read_text())
    assert results["interrupted"] is True and results["complete"] is False
    assert list(results["cells"]) == ["cell-ref"] and results["cells"]["cell-ref"]["status"] == "ok"
    assert results["cells"]["cell-ref"]["node"]["ray_node_id"]
    assert "cancelling 2 Ray task(s)" in err
    assert "| `cell-b` | not run |" in (out / "report.md").read_text()
    shutil.copytree(out, folder / "sequential")  # step 3 resumes this copy without Ray


def test_resume_on_ray_survives_a_lost_node(story, cluster):
    folder = story["folder"]
    out = folder / "out"
    harness = _harness(cluster, "run", "--matrix", str(folder / "m.yaml"), "--out", str(out), "--ray",
                       cluster.address, "--resume")
    servers = _wait_both_serving(harness)
    lost = _node_of(cluster, servers["b"])
    # its raylet and workers SIGKILLed; what the cell started (b's engine, in a session of its own, and the node
    # guard) is left running, as on a node whose Ray died but whose machine did not
    cluster.kill_node(lost, spare=_cell_processes())
    _, err = harness.communicate(timeout=1200)
    assert harness.returncode == 0, err
    results = json.loads((out / "results.json").read_text())
    assert results["complete"] is True and results["interrupted"] is False
    cells = results["cells"]
    assert {cid: c["status"] for cid, c in cells.items()} == {"cell-ref": "ok", "cell-b": "ok", "cell-c": "ok"}
    # b ran again, on the node that is left; c never left it
    assert cells["cell-b"]["node"]["ray_node_id"] == cells["cell-c"]["node"]["ray_node_id"]
    assert any(n.startswith("cell-b: attempt 1 lost: NodeDiedError") and "(attempt 2 of 3)" in n
               for n in results["notes"]), results["notes"]
    assert "attempt 1 lost" in (out / "report.md").read_text()
    deadline = time.monotonic() + 60  # the guard on the lost node kills b's first server once its worker is gone
    while engine_processes() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert engine_processes() == []
    for cid in ("cell-b", "cell-c"):
        assert cells[cid]["probes"]["total"] == 12 and cells[cid]["teardown"]["leftover"] == []
        assert cells[cid]["measures"]["distribution"]["scored"] > 0  # the reference's continuations reached the node


def _shape(out) -> dict:
    results = json.loads((out / "results.json").read_text())
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file() and ".vllm-cache" not in p.parts)
    report = (out / "report.md").read_text()
    return {"files": files, "top": sorted(results), "meta": sorted(results["meta"]),
            "cells": {cid: sorted(c) for cid, c in results["cells"].items()},
            "statuses": {cid: (c["status"], c["phase"]) for cid, c in results["cells"].items()},
            "sections": [line for line in report.splitlines() if line.startswith("## ") and line != "## Nodes"]}


def test_resume_without_ray_gives_the_same_shape(story, engine):
    folder = story["folder"]
    copy = folder / "sequential"
    proc = subprocess.run([*HARNESS, "run", "--matrix", str(folder / "m.yaml"), "--out", str(copy), "--resume"],
                          cwd=REPO, capture_output=True, text=True, timeout=1200,
                          env={k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"})
    assert proc.returncode == 0, proc.stderr
    assert engine_processes() == []
    ray_run, sequential = _shape(folder / "out"), _shape(copy)
    assert sequential == ray_run
    results = json.loads((copy / "results.json").read_text())
    assert results["cells"]["cell-b"]["node"] is None  # ran on the run's own machine
    assert results["cells"]["cell-ref"]["node"]["ray_node_id"]  # kept from the Ray run
