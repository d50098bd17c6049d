"""A cell made to loop on the real engine (issue 42): the same float32 model with a repetition-inducing sampler
default (`--override-generation-config {"frequency_penalty": -2.0}`, a setting the engine applies to every request
that does not set its own: the probes do not), caught by the probes against a reference that does not loop. The
reference is the session's engine behind a proxy (conftest.served_by); the looping cell starts its own."""

import json

import pytest

from tests.integration.conftest import behind_proxy, engine_processes, matrix_yaml, run_harness, served_by

pytestmark = [pytest.mark.engine, pytest.mark.timeout(1800)]  # a safety limit, about 5x a 2-core machine's time

LOOPING = '{args: {--dtype: float32, --override-generation-config: {frequency_penalty: -2.0}}}'
REPEATS = {"loop", "phrase_repeat", "word_repeat", "low_compression", "glued_repeat"}


def test_a_cell_made_to_loop_is_caught_by_its_probes(engine, shared_engine, tmp_path):
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(matrix_yaml(engine, {"ref": served_by(shared_engine), "looping": LOOPING},
                                  command=behind_proxy(engine), extra="distribution: {enabled: false}\n"))
    out = tmp_path / "out"
    proc = run_harness("run", "--matrix", str(matrix), "--out", str(out), timeout=1500)
    assert proc.returncode == 0, proc.stderr
    assert engine_processes() == []
    cells = json.loads((out / "results.json").read_text())["cells"]
    reference, looping = cells["cell-ref"], cells["cell-looping"]
    assert reference["status"] == "ok" and not reference["probes"]["garbage"]
    assert looping["status"] == "garbage" and looping["phase"] == "probes", looping["reason"]
    assert looping["probes"]["flagged"] >= looping["probes"]["total"] / 2 > reference["probes"]["flagged"]
    fired = {f["detector"] for sample in looping["probes"]["offending"] for f in sample["findings"]}
    assert fired & REPEATS, fired  # marked for repeating itself, not for something else
    assert looping["probes"]["max_tokens"] == 64 and looping["probes"]["reasoning"] is False
    report = (out / "report.md").read_text()
    assert "Garbage probes were answered greedily within 64 tokens" in report and "### `cell-looping`" in report
