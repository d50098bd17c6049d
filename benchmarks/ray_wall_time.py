"""Wall time of one matrix run sequentially and on two Ray nodes of this machine (`run --ray`), side by side.

The matrix is the demo's (matrices/cpu-smollm2.yaml), REDUCED so that the comparison takes minutes: its two fault
cells are left out (4 cells: float32 and bfloat16, speculative decoding off and on), quality tasks are limited to
`--limit` samples each, throughput scenarios as in the demo. The Ray run uses a private cluster (a head without GPUs
and two nodes of one logical GPU each, tests/integration/raycluster.py): the reference first, alone, then the three
other cells two at a time.

Read the figure honestly: on one 2-core machine the two "nodes" share the same two cores, so two cells at once each
run about half as fast; what Ray can save here is only the time a cell spends not using the CPU (its engine's
startup waits, teardown, the harness's own work), and the Ray run pays for the cluster's start and for shipping cell
folders. On a real cluster each cell gets a node of its own and the wall time falls towards
reference + ceil((cells - 1) / nodes) x one cell.

    .venv/bin/python benchmarks/ray_wall_time.py [--limit 20] [--keep DIR]     # about 15 minutes on 2 cores
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ruamel.yaml import YAML  # noqa: E402

from tests.integration.raycluster import PrivateRayCluster  # noqa: E402


def reduced_matrix(folder: Path, limit: int) -> Path:
    yaml = YAML(typ="rt")
    data = yaml.load((REPO / "matrices" / "cpu-smollm2.yaml").read_text())
    data["name"] = "cpu-smollm2-reduced"
    data["model"] = str(REPO / ".engine" / "models" / "SmolLM2-135M-Instruct")
    data["command"][0] = str(REPO / ".engine" / "venv" / "bin" / "python")
    data["axes"]["fault"] = {"none": {}}
    data["exclude"] = []
    data["quality"]["limit"] = limit
    path = folder / "matrix.yaml"
    with open(path, "w") as handle:
        yaml.dump(data, handle)
    return path


def timed_run(matrix: Path, out: Path, env: dict[str, str], *extra: str) -> tuple[float, dict]:
    begin = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "evalharness", "run", "--matrix", str(matrix), "--out", str(out),
                           *extra], cwd=REPO, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - begin
    if proc.returncode != 0:
        raise SystemExit(f"run failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    results = json.loads((out / "results.json").read_text())
    return seconds, {cid: (c["status"], c["duration_s"]) for cid, c in results["cells"].items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=20, help="samples per quality task (the demo runs all)")
    parser.add_argument("--keep", help="keep the run folders here")
    args = parser.parse_args()
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="eh-ray-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    matrix = reduced_matrix(folder, args.limit)
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    print(f"matrix: {matrix} (the demo without its two fault cells: 4 cells; quality limit {args.limit})", flush=True)
    load = lambda: "load average %.1f %.1f %.1f" % os.getloadavg()  # noqa: E731 - other work on the machine shows here
    print(f"before: {load()}", flush=True)
    sequential, seq_cells = timed_run(matrix, folder / "sequential", env)
    print(f"sequential: {sequential:.0f} s ({load()} after)", flush=True)
    begin = time.monotonic()
    cluster = PrivateRayCluster(folder / "cluster", env={"PYTHONPATH": env["PYTHONPATH"]}).start(gpu_nodes=2)
    started = time.monotonic() - begin
    try:
        on_ray, ray_cells = timed_run(matrix, folder / "ray", cluster.env, "--ray", cluster.address)
    finally:
        cluster.stop()
    print(f"two Ray nodes: {on_ray:.0f} s (+ {started:.0f} s to start the private cluster, not counted; "
          f"{load()} after)")
    print(f"ratio sequential / Ray: {sequential / on_ray:.2f}x on {os.cpu_count()} cores shared by both nodes")
    print("per cell, seconds (sequential | Ray):")
    for cid in seq_cells:
        s, r = seq_cells[cid], ray_cells.get(cid, ("-", 0.0))
        print(f"  {cid:40s} {s[0]:>6s} {s[1]:7.0f} | {r[0]:>6s} {r[1]:7.0f}")
    print("Two cells at once share this machine's cores: each runs slower, so the gain is bounded by the time cells "
          "spend waiting, not computing; on separate nodes each cell would keep its sequential time. The reference "
          "runs alone in both runs: its two times show how much other work on the machine changed in between.")
    if not args.keep:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
