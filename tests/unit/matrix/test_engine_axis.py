"""The engine as an axis (issue 41): a matrix whose cells run on SGLang and on vLLM, each with its own launcher, flags
and environment; what expansion, validation, launch plans, settings hashes and the run record make of it."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from evalharness.cli import main
from evalharness.matrix.errors import SpecError
from evalharness.matrix.expand import expand, settings_hash
from evalharness.serving.engines import ENGINES, load_matrix
from evalharness.matrix.schema import Matrix
from evalharness.records.run import CellResult, RunMeta, RunResult

REPO = Path(__file__).resolve().parents[3]

MIXED = """\
name: engines
engine: vllm
model: /models/m
command: [./venv/bin/python, -m, vllm.entrypoints.openai.api_server]
args: {--dtype: float32}
env: {HF_HUB_OFFLINE: 1}
axes:
  engine:
    vllm:
      args: {--max-model-len: 2048, --enforce-eager: true}
      env: {VLLM_CPU_KVCACHE_SPACE: 2}
    sglang:
      engine: sglang
      command: [../sglang-venv/bin/sglang, serve]
      args: {--device: cpu, --context-length: 2048}
      env: {SGLANG_USE_CPU_ENGINE: 1}
reference: {engine: vllm}
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "matrix.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_each_cell_launches_on_its_own_engine_with_its_own_command_flags_and_environment(tmp_path):
    matrix, cells, reference = load_matrix(_write(tmp_path, MIXED))
    by_id = {c.id: c for c in cells}
    vllm, sglang = by_id["engine-vllm"], by_id["engine-sglang"]
    assert (reference.id, vllm.engine, sglang.engine) == ("engine-vllm", "vllm", "sglang")
    vllm_plan = ENGINES[vllm.engine].launch_plan(matrix, vllm, 8000, "/out")
    sglang_plan = ENGINES[sglang.engine].launch_plan(matrix, sglang, 8001, "/out")
    # relative launchers resolved against the matrix's folder, the matrix's own for the cell on its engine
    assert vllm_plan.argv[:3] == [str(tmp_path / "venv/bin/python"), "-m", "vllm.entrypoints.openai.api_server"]
    assert sglang_plan.argv[:4] == [str(tmp_path.parent / "sglang-venv/bin/sglang"), "serve", "--model-path", "/models/m"]
    assert "--model" in vllm_plan.argv and "--enforce-eager" in vllm_plan.argv and "--device" not in vllm_plan.argv
    assert "--enable-metrics" in sglang_plan.argv and "--enforce-eager" not in sglang_plan.argv
    assert sglang_plan.health_path == "/health_generate" and vllm_plan.health_path == "/health"
    assert sglang.env == {"HF_HUB_OFFLINE": "1", "SGLANG_USE_CPU_ENGINE": "1"}
    assert "VLLM_CACHE_ROOT" in vllm_plan.env and "VLLM_CACHE_ROOT" not in sglang_plan.env
    assert (ENGINES[vllm.engine].terminate, ENGINES[sglang.engine].terminate) == ("group", "launcher")


def test_a_cell_on_another_engine_without_a_command_gets_that_engines_default_not_the_matrixs():
    matrix = Matrix.model_validate({"name": "m", "engine": "vllm", "model": "/m", "command": ["/v/python", "-m", "x"],
                                    "axes": {"engine": {"vllm": {}, "sglang": {"engine": "sglang"}}}})
    sglang = next(c for c in expand(matrix) if c.engine == "sglang")
    assert matrix.command_for(sglang) is None
    assert ENGINES["sglang"].launch_plan(matrix, sglang, 1, "/o").argv[:2] == ["sglang", "serve"]


def test_hashes_of_a_one_engine_matrix_are_unchanged_and_the_engine_is_in_the_hash():
    matrix = Matrix.model_validate(yaml_of(MIXED))
    cells = {c.id: c for c in expand(matrix)}
    vllm = cells["engine-vllm"]
    # the cell on the matrix's own engine hashes as every cell did before engines were an axis: resumes keep it
    assert vllm.settings_hash == settings_hash(matrix, vllm.args, vllm.env)
    sglang = cells["engine-sglang"]
    assert sglang.settings_hash != settings_hash(matrix, sglang.args, sglang.env)
    # the same flags and variables on another engine are another measurement
    same_flags = Matrix.model_validate({**yaml_of(MIXED), "axes": {"engine": {
        "a": {"args": {"--x": 1}}, "b": {"engine": "sglang", "args": {"--x": 1}}}}})
    a, b = expand(same_flags)
    assert a.args == b.args and a.env == b.env and a.settings_hash != b.settings_hash


def yaml_of(text: str) -> dict:
    from ruamel.yaml import YAML

    return YAML(typ="safe").load(text)


@pytest.mark.parametrize("change,message", [
    # two axes of one cell naming different engines: no engine wins silently
    ({"axes": {"engine": {"s": {"engine": "sglang"}}, "other": {"v": {"engine": "vllm"}}}},
     "axes 'engine' and 'other' both set engine"),
    # no engine at the top and a cell whose values name none
    ({"engine": None, "axes": {"engine": {"s": {"engine": "sglang"}, "plain": {}}}}, "no engine"),
])
def test_conflicting_or_missing_engines_are_refused(change, message):
    matrix = Matrix.model_validate({"name": "m", "engine": "vllm", "model": "/m", **change})
    with pytest.raises(SpecError, match=message):
        expand(matrix)


def test_a_matrix_without_any_engine_or_an_external_one_with_engine_values_is_refused():
    """The engines' own traits decide (matrix/engines.py): handed in as the loader does, an endpoint engine takes no
    launched axis values, and a name no engine module has is refused with the names there are."""
    engines = {"engines": ENGINES}
    with pytest.raises(ValueError, match="engine: needed"):
        Matrix.model_validate({"name": "m", "model": "/m"}, context=engines)
    with pytest.raises(ValueError, match="engine 'external' serves one endpoint"):
        Matrix.model_validate({"name": "m", "engine": "external", "model": "/m", "base_url": "http://h/v1",
                               "axes": {"engine": {"s": {"engine": "sglang"}}}}, context=engines)
    with pytest.raises(ValueError, match="'external' is not an engine the harness launches"):
        Matrix.model_validate({"name": "m", "engine": "vllm", "model": "/m",
                               "axes": {"engine": {"s": {"engine": "external"}}}}, context=engines)
    with pytest.raises(ValueError, match="'tgi' is not an engine; expected 'sglang', 'vllm'"):
        Matrix.model_validate({"name": "m", "engine": "tgi", "model": "/m"}, context=engines)
    # every cell naming its engine: no top-level engine needed
    matrix = Matrix.model_validate({"name": "m", "model": "/m", "axes": {"engine": {
        "s": {"engine": "sglang"}, "v": {"engine": "vllm"}}}}, context=engines)
    assert [c.engine for c in expand(matrix)] == ["sglang", "vllm"]


def test_validate_lists_each_cells_engine_and_one_launch_per_engine(tmp_path, capsys):
    assert main(["validate", "--matrix", str(_write(tmp_path, MIXED)), "--no-engine-check"]) == 0
    out = capsys.readouterr().out
    assert "engines vllm + sglang, 2 cells, reference engine-vllm" in out
    assert "launch (engine-vllm" in out and "launch (engine-sglang" in out
    assert "engine-sglang [sglang]: --dtype float32 --device cpu --context-length 2048" in out
    assert "SGLang: not checked" in out


def _cell(cid: str, engine: str | None, version: str | None, status: str = "ok") -> CellResult:
    return CellResult(id=cid, axes={}, settings_hash="h", engine=engine, args={}, env={}, argv=[], status=status,
                      phase="done", resolved={"version": version} if version else {}, started_at="t",
                      finished_at="t", duration_s=1.0)


def test_the_run_names_every_engine_with_its_version_the_references_first():
    meta = RunMeta(harness_version="0", engine="vllm + sglang", matrix_name="m", matrix_path="m", started_at="t")
    run = RunResult(meta=meta, reference="v", cell_order=["s", "v"],
                    cells={"s": _cell("s", "sglang", "0.5.23"), "v": _cell("v", "vllm", "0.32.0")})
    assert run.engines() == {"vllm": "0.32.0", "sglang": "0.5.23"}
    assert run.engine_line() == "vllm 0.32.0 (the reference's) and sglang 0.5.23"
    # a run recorded before cells carried their engine: the run's engine stands for every cell
    old = RunResult(meta=meta.model_copy(update={"engine": "vllm"}), reference="v", cell_order=["v"],
                    cells={"v": _cell("v", None, "0.32.0")})
    assert old.cell_engine("v") == "vllm" and old.engine_line() == "vllm 0.32.0"


def test_the_shipped_engines_matrix_serves_one_model_on_both_engines():
    matrix, cells, reference = load_matrix(REPO / "matrices" / "cpu-engines.yaml")
    assert {c.id: c.engine for c in cells} == {"engine-vllm.dtype-float32": "vllm", "engine-vllm.dtype-bfloat16": "vllm",
                                               "engine-sglang.dtype-float32": "sglang"}
    assert reference.id == "engine-vllm.dtype-float32"
    # both engines split loglikelihood prompts alike: the model folder's own tokenizer (SGLang has no /tokenizer_info)
    assert matrix.quality.tokenizer == "local" and "eh_choice" in matrix.quality.tasks
    sglang = next(c for c in cells if c.engine == "sglang")
    assert matrix.command_for(sglang)[0].endswith(".engine/sglang/venv/bin/sglang")
    assert sglang.args["--context-length"] == next(c for c in cells if c.engine == "vllm").args["--max-model-len"]


def test_the_tokenizer_default_follows_what_each_engine_serves(tmp_path):
    """An engine without /tokenizer_info (its module's `tokenizer_info`: SGLang's and transformers serve's) splits
    loglikelihood prompts with the local tokenizer by default; vLLM's endpoint serves it, so remote stays."""
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "tokenizer.json").write_text("{}")
    made = {}
    for engine in ("vllm", "sglang", "transformers"):
        path = tmp_path / f"{engine}.yaml"
        path.write_text(f"name: m\nengine: {engine}\nmodel: ./model\nquality: {{tasks: [eh_choice]}}\n")
        made[engine] = load_matrix(path)[0].quality.tokenizer
    assert made == {"vllm": "remote", "sglang": "local", "transformers": "local"}
