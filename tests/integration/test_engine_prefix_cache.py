"""The prefix-cache check on the real engine (issue 60, 1): cells served by the session's vLLM engine, each through
the fault proxy; the engine's cache emptied through its own /reset_prefix_cache (the shared engine serves vLLM's dev
endpoints, as the harness launches vLLM when the check is on). One cell's proxy alters every answer that would hit
the cache (rule `warm`: an engine whose cached path is broken, which the real engine here cannot show); the
reference against itself is not flagged, the broken cell is, and the report and results.json say so."""

import json

import pytest

from tests.integration.conftest import behind_proxy, engine_processes, matrix_yaml, run_harness

pytestmark = [pytest.mark.engine, pytest.mark.timeout(1800)]  # a safety limit, about 5x a 2-core machine's time

CHECK = "prefix_cache: {enabled: true, count: 8, siblings: 4, prefix_words: 80, max_tokens: 8}\n"
WARM_BROKEN = {"rules": [{"match": {"path": "/v1/chat/completions", "warm": True, "body": {"max_tokens": 8}},
                          "action": "alter", "text": "the cached path answers otherwise"}]}


def _cell(shared, faults: dict | None = None) -> str:
    env = {"EH_UPSTREAM": shared.root_url, **({"EH_FAULTS": json.dumps(faults)} if faults else {})}
    return json.dumps({"args": {"--dtype": "float32"}, "env": env})


def test_a_cell_whose_cached_path_answers_otherwise_is_flagged_and_the_reference_against_itself_is_not(
        engine, shared_engine, tmp_path):
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(matrix_yaml(engine, {"ref": _cell(shared_engine), "twin": _cell(shared_engine),
                                           "broken": _cell(shared_engine, WARM_BROKEN)}, command=behind_proxy(engine),
                                  extra="distribution: {enabled: false}\nprobes: {enabled: false}\n" + CHECK))
    out = tmp_path / "out"
    proc = run_harness("run", "--matrix", str(matrix), "--out", str(out), timeout=1500)
    assert proc.returncode == 0, proc.stderr
    assert engine_processes() == []
    cells = json.loads((out / "results.json").read_text())["cells"]
    records = {cid: cells[f"cell-{cid}"]["measures"]["prefix_cache"] for cid in ("ref", "twin", "broken")}
    for record in records.values():
        assert record["unavailable"] is None and record["flush"] == "POST /reset_prefix_cache"
        assert len(record["answers"]) == 8 and not [a for a in record["answers"] if a["error"]]
    reference = records["ref"]["answers"]
    assert all(a["logprob_gap"] is not None for a in reference)  # the engine's own log-probabilities, both ways
    assert sum(a["cold"] != a["warm"] for a in reference) <= 2  # float32 on CPU: the warm path answers alike
    assert all(a["warm"] == "the cached path answers otherwise" for a in records["broken"]["answers"])
    changes = {cid: cells[f"cell-{cid}"]["drift"]["measures"]["prefix_cache"] for cid in ("twin", "broken")}
    assert changes["broken"]["flagged"] and changes["broken"]["cell"] == 1.0
    assert not changes["twin"]["flagged"]
    report = (out / "report.md").read_text()
    assert "## Prefix cache" in report and "| `cell-broken` | 8/8 |" in report and "**flagged**" in report
    assert cells["cell-ref"]["requests"]["prefix_cache"]["failed"] == 0
