"""The llama.cpp engine (evalharness/serving/engines/llamacpp.py), added as one module and its registry line (issue
59), against a stand-in llama-server written from llama.cpp's server sources (llamacpp_standin.py): `evalharness run`
launches it by argv with `-m`, `--alias` and the cell's flags, waits out its 503 while loading, reads /props as what
it runs, measures it through the OpenAI routes (streamed, usage in the last object), says what it cannot do (the
numerics check) and tears it down; a model it cannot load is classified from its log."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evalharness.serving.engines import ENGINES
from evalharness.serving.logscan import classify_crash

pytestmark = [pytest.mark.timeout(180)]

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
STANDIN = HERE / "llamacpp_standin.py"


def test_a_llamacpp_matrix_runs_on_the_standin_and_reads_what_the_server_says(tmp_path):
    model = tmp_path / "smollm2-135m-q8_0.gguf"
    model.write_bytes(b"GGUF")  # the stand-in only opens it
    matrix = tmp_path / "m.yaml"
    matrix.write_text(f"""\
name: llamacpp
engine: llamacpp
model: {json.dumps(str(model))}
served_model_name: smollm2
command: [{json.dumps(sys.executable)}, {json.dumps(str(STANDIN))}]
args: {{-c: 2048}}
axes:
  slots:
    one: {{args: {{-np: 1}}}}
    two: {{args: {{-np: 2}}}}
timeouts: {{startup_s: 30, teardown_grace_s: 10}}
probes: {{enabled: false}}  # the stand-in's one sentence is no answer to a probe
throughput: {{scenarios: [{{name: c2, concurrency: 2, input_len: 16, output_len: 32, requests: 6,
                           warmup_requests: 1}},
                          {{name: chat, api: chat, concurrency: 2, input_len: 16, output_len: 32, requests: 6,
                           warmup_requests: 1}}]}}
""")
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "evalharness", "run", "--matrix", str(matrix), "--out", str(out)],
                          capture_output=True, text=True, timeout=170, cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cells = json.loads((out / "results.json").read_text())["cells"]
    one, two = cells["slots-one"], cells["slots-two"]
    for cell in (one, two):
        assert cell["status"] == "ok" and cell["phase"] == "done", cell["reason"]
        argv = cell["argv"]
        assert argv[1:3] == [str(STANDIN), "-m"] and argv[argv.index("--alias") + 1] == "smollm2"
        assert cell["resolved"]["version"] == "b7000-standin"
        assert cell["resolved"]["props.default_generation_settings.n_ctx"] == 2048
        assert cell["teardown"]["leftover"] == []
        # completions end on an object with usage always, chat on a usage chunk of its own (stream_options)
        for scenario in cell["throughput"]:
            assert scenario["completed"] == 6 and scenario["output_tok_s"] > 0, scenario
            assert scenario["output_tokens"] == 6 * 32, scenario
        # no log-probabilities by prompt token id: said, not failed
        numerics = cell["measures"]["distribution"]
        assert numerics["path"] is None and "llama.cpp" in numerics["error"]
        assert "distribution" not in cell["requests"] and "distribution" not in cell["phase_seconds"]  # never asked
    assert (one["resolved"]["props.total_slots"], two["resolved"]["props.total_slots"]) == (1, 2)
    report = (out / "report.md").read_text()
    assert "engine llamacpp b7000-standin" in report  # its build, read from /props, is the version the report names
    assert "Not measured: llama.cpp returns no log-probabilities by token id." in report


def test_a_model_llamacpp_cannot_load_is_classified_from_its_log(tmp_path):
    proc = subprocess.run([sys.executable, str(STANDIN), "-m", str(tmp_path / "missing.gguf"), "--host", "127.0.0.1",
                           "--port", "1", "--alias", "m"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 1
    crash = classify_crash(proc.stdout, ENGINES["llamacpp"].log_rules)
    assert crash.kind == "model_not_found" and "failed to load model" in crash.line
    assert ENGINES["llamacpp"].log_markers(proc.stdout) >= 1
