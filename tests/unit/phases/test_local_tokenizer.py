"""`quality.tokenizer: local`: the served model's tokenizer.json read by the harness (phases/_local_tokenizer.py) behind
lm-eval's RemoteTokenizer interface, used on lm-eval's own "remote" code paths, found where the engine says it loaded
it, checked against the engine's /tokenize; and the matrix's default and checks (SGLang: local; vLLM: remote; a model
folder without tokenizer.json refused before launch, exit 2)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from evalharness.cli import main
from evalharness.matrix.errors import SpecError
from evalharness.serving.engines import load_matrix
from evalharness.phases._local_tokenizer import (PROBE, LocalTokenizer, TokenizerProblem, engine_agreement, root_of,
                                                 served_tokenizer, tokenizer_folder)

REPO = Path(__file__).resolve().parents[3]
MODEL = REPO / ".engine" / "models" / "SmolLM2-135M-Instruct"  # built by scripts/setup.sh
CHOICES = REPO / "tasks" / "lm_eval" / "data" / "choice.jsonl"


@pytest.fixture(scope="module")
def smollm2() -> LocalTokenizer:
    if not (MODEL / "tokenizer.json").is_file():
        pytest.fail(f"{MODEL} is not built: run scripts/setup.sh")
    return LocalTokenizer(MODEL)


def _tiny(folder: Path, **config) -> Path:
    """A word-level tokenizer.json (made with the tokenizers library itself) and the given config files."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, "<eot>": 3, "hello": 4, "world": 5}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.add_special_tokens(["<s>", "</s>", "<eot>"])
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(folder / "tokenizer.json"))
    for name, content in config.items():
        (folder / f"{name}.json").write_text(json.dumps(content))
    return folder


def test_the_shipped_models_tokenizer_round_trips_and_names_its_special_tokens(smollm2):
    texts = [PROBE, *(json.loads(line)["stem"] + " " + choice for line in CHOICES.read_text().splitlines()[:10]
                      for choice in json.loads(line)["choices"])]
    for text in texts:
        ids = smollm2.encode(text)
        assert ids and smollm2.decode(ids) == text  # lossless: the decoded prompt re-tokenizes to the same ids
    assert smollm2.batch_decode([smollm2.encode(t) for t in texts]) == texts
    assert smollm2.encode("The opposite of hot is") == [504, 7011, 282, 3380, 314]  # as SGLang's /tokenize gives
    # tokenizer_config.json's tokens (ChatML): ids as the engine's tokenizer has them, no special token added
    assert (smollm2.eos_token, smollm2.eos_token_id, smollm2.eot_token) == ("<|im_end|>", 2, 2)
    assert (smollm2.bos_token, smollm2.bos_token_id) == ("<|im_start|>", 1)
    assert smollm2.encode("<|im_end|>") == [2] and smollm2.decode([1, 2]) == "<|im_start|><|im_end|>"
    assert smollm2.describe()["vocab_size"] == 49152


def test_lm_eval_uses_it_on_its_remote_code_paths(smollm2):
    from evalharness.phases._lmeval_models import RecordingCompletions

    lm = RecordingCompletions(base_url="http://127.0.0.1:9/v1/completions", model="m", tokenizer_backend="local",
                              local_tokenizer=str(MODEL), tokenized_requests=False)
    assert isinstance(lm.tokenizer, LocalTokenizer) and lm.tokenizer_backend == "remote"
    assert lm.tokenized_requests is False  # as the worker asks: the prompt goes as its decoded text
    assert (lm.eot_token_id, lm.prefix_token_id, lm.eos_string) == (2, 1, "<|im_end|>")
    assert lm.tok_encode("The opposite of hot is") == [504, 7011, 282, 3380, 314]
    assert lm.tok_encode(["hot", "cold"]) == [smollm2.encode("hot"), smollm2.encode("cold")]
    assert lm.tok_encode("The opposite of hot is", left_truncate_len=2) == [3380, 314]
    context, continuation = lm._encode_pair("The opposite of hot is", " cold")
    assert context == smollm2.encode("The opposite of hot is") and smollm2.decode(continuation) == " cold"
    assert lm.create_message([context + continuation]) == "The opposite of hot is cold"
    payload = lm._create_payload("The opposite of hot is cold", generate=False)
    assert payload["echo"] is True and payload["logprobs"] == 1 and payload["max_tokens"] == 1
    # the continuation's log-probabilities are read at the local context length
    echoed = {"choices": [{"index": 0, "logprobs": {"token_logprobs": [None, -1.0, -2.0, -0.5, -0.25, -3.0, -9.0],
                                                      "top_logprobs": [None, *({"x": -0.1} for _ in range(6))]}}]}
    assert lm.parse_logprobs(echoed, ctxlens=[len(context)]) == [(-3.0, False)]
    with pytest.raises(ValueError, match="local_tokenizer"):
        RecordingCompletions(base_url="http://127.0.0.1:9/v1/completions", model="m", tokenizer_backend="local")


def test_neither_torch_nor_transformers_is_loaded():
    code = ("import sys; from evalharness.phases._lmeval_models import RecordingCompletions as R; "
            f"lm = R(base_url='http://127.0.0.1:9/v1/completions', model='m', tokenizer_backend='local', "
            f"local_tokenizer={str(MODEL)!r}); lm.tok_encode('a b'); "
            "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_special_tokens_come_from_the_config_files_in_transformers_order(tmp_path):
    folder = _tiny(tmp_path / "m", tokenizer_config={"bos_token": {"content": "<s>", "lstrip": False},
                                                     "eos_token": "</s>", "pad_token": None},
                   special_tokens_map={"eos_token": {"content": "<eot>"}})
    tokenizer = LocalTokenizer(folder)
    assert (tokenizer.bos_token, tokenizer.bos_token_id) == ("<s>", 1)
    assert (tokenizer.eos_token, tokenizer.eos_token_id) == ("<eot>", 3)  # special_tokens_map.json over the config
    assert tokenizer.encode("hello world") == [4, 5] and tokenizer.pad_token is None
    bare = LocalTokenizer(_tiny(tmp_path / "bare"))  # no config files: no special tokens named, as lm-eval allows
    assert bare.eos_token_id is None and bare.bos_token_id is None
    (folder / "tokenizer_config.json").write_text("{not json")
    with pytest.raises(TokenizerProblem, match="tokenizer_config.json is unreadable"):
        LocalTokenizer(folder)
    (folder / "tokenizer.json").write_text("{}")
    with pytest.raises(TokenizerProblem, match="could not be loaded by the tokenizers library"):
        LocalTokenizer(folder)


def test_the_tokenizer_folder_is_found_or_its_absence_named(tmp_path, monkeypatch):
    assert tokenizer_folder(str(_tiny(tmp_path / "m"))) == tmp_path / "m"
    (tmp_path / "empty").mkdir()
    with pytest.raises(TokenizerProblem, match=r"empty/tokenizer.json .*does not exist"):
        tokenizer_folder(str(tmp_path / "empty"))
    with pytest.raises(TokenizerProblem, match="does not exist on this machine"):
        tokenizer_folder(str(tmp_path / "gone"))
    # a hub id: its snapshot in the Hugging Face cache, where the engine on this machine downloaded it
    cache = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    import huggingface_hub.constants as constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    with pytest.raises(TokenizerProblem, match="not in the Hugging Face cache"):
        tokenizer_folder("org/model")
    snapshot = cache / "models--org--model" / "snapshots" / "abc123"
    _tiny(snapshot)
    (cache / "models--org--model" / "refs").mkdir()
    (cache / "models--org--model" / "refs" / "main").write_text("abc123")
    assert tokenizer_folder("org/model") == snapshot


class _Engine(BaseHTTPRequestHandler):
    """/model_info (SGLang) or /v1/models (vLLM), and /tokenize with the ids the test sets."""

    routes: dict[str, object] = {}
    seen: list[dict] = []

    def _reply(self, body) -> None:
        if body is None:
            self.send_response(404)
            self.end_headers()
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802
        self._reply(self.routes.get(self.path))

    def do_POST(self) -> None:  # noqa: N802
        self.seen.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        self._reply(self.routes.get(self.path))

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def engine():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Engine)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Engine.routes, _Engine.seen = {}, []
    yield f"http://127.0.0.1:{server.server_address[1]}", _Engine
    server.shutdown()
    server.server_close()


def test_the_engine_names_the_tokenizer_it_serves_and_its_tokenize_must_agree(engine, smollm2, tmp_path):
    root, handler = engine
    assert root_of(f"{root}/v1") == root_of(f"{root}/v1/completions") == root_of(f"{root}/v1/chat/completions") == root
    handler.routes["/model_info"] = {"model_path": "m", "tokenizer_path": str(MODEL)}  # SGLang
    assert served_tokenizer(f"{root}/v1") == str(MODEL)
    handler.routes.pop("/model_info")
    handler.routes["/v1/models"] = {"data": [{"id": "lora", "root": "/adapters/x", "parent": "smollm2"},
                                             {"id": "smollm2", "root": str(MODEL)}]}  # vLLM
    assert served_tokenizer(f"{root}/v1") == str(MODEL)
    handler.routes.pop("/v1/models")
    with pytest.raises(TokenizerProblem, match="names no tokenizer path"):
        served_tokenizer(f"{root}/v1")
    # a server that names its model by the folder it was given (transformers serve) and answers neither
    assert served_tokenizer(f"{root}/v1", served_model=str(MODEL)) == str(MODEL)
    with pytest.raises(TokenizerProblem, match="names no tokenizer path"):
        served_tokenizer(f"{root}/v1", served_model="smollm2-135m")  # a name, not a folder
    with pytest.raises(TokenizerProblem, match="could not ask"):
        served_tokenizer("http://127.0.0.1:9/v1", timeout_s=2)

    assert engine_agreement(smollm2, f"{root}/v1", "smollm2") is None  # no /tokenize: nothing to ask
    handler.routes["/tokenize"] = {"tokens": smollm2.encode(PROBE), "count": 35}
    assert engine_agreement(smollm2, f"{root}/v1", "smollm2") is True
    assert handler.seen[-1] == {"model": "smollm2", "prompt": PROBE, "add_special_tokens": False}
    handler.routes["/tokenize"] = {"tokens": [*smollm2.encode(PROBE)[:7], 9, 9]}
    with pytest.raises(TokenizerProblem, match=r"disagree on a probe text from token 7 .*engine \[9, 9\]"):
        engine_agreement(smollm2, f"{root}/v1", "smollm2")


def test_the_worker_stops_a_task_whose_tokenizer_files_are_missing(engine, tmp_path):
    """Exit 3 (a setting no retry can meet) with the message on the log's last line, before any request."""
    root, handler = engine
    (tmp_path / "no-tokenizer").mkdir()
    handler.routes["/model_info"] = {"tokenizer_path": str(tmp_path / "no-tokenizer")}
    spec = {"task": "eh_choice", "include_path": str(REPO / "tasks" / "lm_eval"), "base_url": f"{root}/v1",
            "model": "smollm2", "api": "completions", "tokenizer": "local", "out_dir": str(tmp_path / "out")}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    proc = subprocess.run([sys.executable, "-m", "evalharness.phases._lmeval_worker", str(tmp_path / "spec.json")],
                          capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 3, proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("task eh_choice: quality.tokenizer: local reads ") and "no-tokenizer/tokenizer.json" in last
    assert not [s for s in handler.seen if "prompt" in s and "echo" in s]  # no request was sent


SGLANG = """\
name: t
engine: sglang
model: {model}
axes:
  dtype:
    float32: {{args: {{--dtype: float32}}}}
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "m.yaml"
    path.write_text(text)
    return path


def test_the_default_is_local_where_sglang_serves_a_cell_and_remote_on_vllm(tmp_path):
    folder = _tiny(tmp_path / "model")
    quality = "quality: {tasks: [eh_choice]}\n"
    matrix, _, _ = load_matrix(_write(tmp_path, SGLANG.format(model=folder) + quality))
    assert matrix.quality.tokenizer == "local"
    vllm = SGLANG.replace("engine: sglang", "engine: vllm")
    matrix, _, _ = load_matrix(_write(tmp_path, vllm.format(model=folder) + quality))
    assert matrix.quality.tokenizer == "remote"  # vLLM's own tokenizer, as before local existed
    # the engine as an axis: one SGLang value makes local the default of every cell, both engines alike
    mixed = vllm + "  engine:\n    vllm: {{}}\n    sglang: {{engine: sglang}}\n"
    matrix, cells, _ = load_matrix(_write(tmp_path, mixed.format(model=folder) + quality))
    assert matrix.quality.tokenizer == "local" and {c.engine for c in cells} == {"vllm", "sglang"}
    message = str(pytest.raises(SpecError, load_matrix, _write(
        tmp_path, mixed.format(model=folder) + "quality: {tasks: [eh_choice], tokenizer: remote}\n")).value)
    assert "SGLang has no /tokenizer_info" in message and "tokenizer: local" in message
    matrix, _, _ = load_matrix(_write(tmp_path, vllm.format(model=folder) +
                                      "quality: {tasks: [eh_choice], tokenizer: local}\n"))
    assert matrix.quality.tokenizer == "local"  # local on vLLM too, when asked


def test_a_model_folder_without_tokenizer_json_is_refused_before_launch(tmp_path, capsys):
    (tmp_path / "model").mkdir()
    text = SGLANG.format(model="./model") + "quality:\n  tasks: [eh_choice]\n  tokenizer: local\n"
    message = str(pytest.raises(SpecError, load_matrix, _write(tmp_path, text)).value)
    # the file and line of the key, the file expected and the ways out
    assert message.startswith(f"{tmp_path / 'm.yaml'}:9: quality.tokenizer: local reads the served model's "
                              "tokenizer.json"), message
    assert f"{tmp_path / 'model'} has none" in message and "`none` (generation tasks only)" in message
    assert main(["validate", "--matrix", str(tmp_path / "m.yaml")]) == 2
    assert "tokenizer.json" in capsys.readouterr().err
    # the default on SGLang is checked the same way, at the model's line
    message = str(pytest.raises(SpecError, load_matrix, _write(
        tmp_path, SGLANG.format(model="./gone") + "quality: {tasks: [eh_choice]}\n")).value)
    assert ":3: quality.tokenizer: local" in message and "does not exist" in message
    # not checked before launch: generation-only, chat, a hub id (the engine may download it), a tokenizer flag
    for quality in ("{tasks: [eh_copy], tokenizer: none}", "{tasks: [eh_copy], api: chat}"):
        load_matrix(_write(tmp_path, SGLANG.format(model="./model") + f"quality: {quality}\n"))
    load_matrix(_write(tmp_path, SGLANG.format(model="org/model") + "quality: {tasks: [eh_choice]}\n"))
    flagged = SGLANG.format(model="./model").replace("axes:", "args: {--tokenizer-path: /elsewhere}\naxes:")
    load_matrix(_write(tmp_path, flagged + "quality: {tasks: [eh_choice]}\n"))
