"""The harness against the real SGLang 0.5.23 on this CPU (SGLANG_USE_CPU_ENGINE=1 --device cpu, the SmolLM2 folder of
the vLLM tests). One server for the whole module, launched and torn down by the harness's own code
(serving/server.py with the SGLang engine's launch plan); the tests that only read share it, and the last test tears
it down and proves nothing of the real process tree is left. A crash cell runs beside it (it dies during start-up).
The module's budget is one server start, a few short requests (two short quality tasks, one of them multiple choice
scored by loglikelihood) and one crash: about 3 minutes on this machine.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import httpx
import psutil
import pytest

from evalharness.serving.engines import load_matrix
from evalharness.measures.tasks import worker_spec
from evalharness.analysis.outputlength import length_ratio
from evalharness.phases.quality import TaskSetup, run_quality
from evalharness.phases.throughput.client import LoadClient, run_scenario
from evalharness.serving.engines._common import prometheus_totals
from evalharness.serving.engines.sglang import COUNTERS, SglangEngine
from evalharness.serving.engines.sglang_logs import LOG_RULES
from evalharness.serving.logscan import classify_crash
from evalharness.serving.server import ServerProcess
from tests.integration.conftest import MODEL, REPO, SERVED_NAME, free_port, run_harness
from tests.integration.sglang_real import require_sglang, sglang_matrix

pytestmark = [pytest.mark.timeout(900)]

ENGINE = SglangEngine()
# the real logs are kept here after every run (ignored by git); tests/data/sglang-0.5.23-cpu-*.log were copied from it
KEEP = REPO / ".cache" / "test-artifacts"
# decode against prefill log-probabilities of the same tokens on the real server (float32): see the test below
TOLERANCE = 1e-3
# "holds zero" at the resolution of the engine's own decode-vs-prefill gap (up to 1.9e-5 per token, measured below):
# SGLang ignores a request's seed without --enable-deterministic-inference, so the cell's own samples are other tokens
# than the reference's, and the gap, which varies by token, cancels only on average (the server against itself:
# -3.1e-6 [-5.0e-6, -1.3e-6] on 6 contexts; a real bfloat16 cell measures about 1e-3)
FLOAT_RESOLUTION = 1e-5


def _launch(tmp: Path, cell_args: str, name: str):
    matrix, cells, _ = load_matrix(sglang_matrix(tmp, {name: cell_args}))
    cell = cells[0]
    plan = ENGINE.launch_plan(matrix, cell, free_port(), str(tmp))
    server = ServerProcess(plan.argv, plan.env, tmp / "server.log", plan.root_url + plan.health_path)
    server.start()
    return matrix, plan, server


def _setup(plan, api: str, tokenizer: str) -> TaskSetup:
    """The shipped tasks through the served SGLang, no task retries (a failure here is the finding)."""
    return TaskSetup(base_url=plan.base_url, model=plan.served_model_name, include_path=str(REPO / "tasks" / "lm_eval"),
                     include_defaults=False, api=api, tokenizer=tokenizer, request_timeout_s=300, task_timeout_s=600,
                     retries=0)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    require_sglang()
    tmp = tmp_path_factory.mktemp("sglang-real")
    # the story's reasoning parser (matrices/sm120.yaml): the chat test reads what it leaves in reasoning_content;
    # the qwen25 tool parser and a template that renders tools (tasks/calls/smollm2_tools.jinja, SmolLM2's own
    # without tools) for the calls tasks
    cell_args = json.dumps({"args": {"--reasoning-parser": "qwen3", "--tool-call-parser": "qwen25",
                                     "--chat-template": str(REPO / "tasks" / "calls" / "smollm2_tools.jinja")}})
    matrix, plan, server = _launch(tmp, cell_args, "ref")
    try:
        readiness = server.wait_ready(600)
        if readiness.outcome != "ready":
            pytest.fail(f"the real SGLang did not start ({readiness}); its log:\n"
                        f"{server.log_path.read_text(errors='replace')[-3000:]}")
        print(f"real SGLang ready after {readiness.seconds:.1f}s")
        yield {"matrix": matrix, "plan": plan, "server": server, "readiness": readiness, "tmp": tmp}
    finally:
        server.stop(grace_s=30, terminate=ENGINE.terminate)


def test_ready_through_health_generate(served):
    plan, server = served["plan"], served["server"]
    assert plan.health_path == "/health_generate" and served["readiness"].outcome == "ready"
    log = server.log_path.read_text(errors="replace")
    assert "The server is fired up and ready to roll!" in log
    # the harness's poll was the one that got 200, from the process we launched (its log shows the request)
    assert '"GET /health_generate HTTP/1.1" 200' in log
    assert httpx.get(plan.root_url + "/health_generate", timeout=30).status_code == 200


def test_resolved_settings_and_facts_from_server_info(served):
    plan, matrix = served["plan"], served["matrix"]
    log = served["server"].log_path.read_text(errors="replace")
    with httpx.Client(timeout=30) as client:
        resolved = ENGINE.resolved_config(client, plan, log)
        facts = ENGINE.server_facts(client, plan, matrix)
    # what the CPU build resolved by itself: attention falls back to torch_native, no CUDA graphs
    assert resolved["device"] == "cpu" and resolved["attention_backend"] == "torch_native"
    assert resolved["dtype"] == "float32" and resolved["max_total_tokens"] == 8192
    assert not any(k in resolved for k in ("port", "host", "launch_command", "model_path"))
    # measured at startup, not chosen: facts, never settings
    for measured in ("max_total_num_tokens", "max_req_input_len", "status"):
        assert measured not in resolved
    assert facts["versions"]["sglang"] == "0.5.23"
    assert facts["token_capacity"] == 8192


def test_throughput_figures_match_the_engines_counters(served):
    plan = served["plan"]
    with httpx.Client(timeout=120) as client:
        before = ENGINE.before_load(client, plan)
        assert before["flush_status"] == 200, before  # idle: SGLang's /flush_cache answers 200
        client_side = LoadClient(plan.base_url, plan.served_model_name, api="chat", timeout_s=300,
                                 extra_body=ENGINE.load_request_extras)
        result = run_scenario(client_side, name="two", concurrency=2, request_rate=None, input_len=32,
                              output_len=16, requests=2, duration_s=None, warmup=0)
        after = prometheus_totals(client.get(plan.root_url + "/metrics").text, COUNTERS)
    assert result.completed == 2 and result.output_tokens == 32, result
    # the engine's own count of generated tokens moved by exactly what the client counted from usage
    key = "sglang:generation_tokens_total"
    assert after[key] - before[key] == result.output_tokens
    assert ENGINE.after_load(httpx.Client(timeout=30), plan, before) == {}  # not speculative: no acceptance figure


def test_quality_tasks_through_sglang_generation_and_loglikelihood(served, tmp_path):
    """A generation task and eh_choice, multiple choice scored by loglikelihood. lm-eval's RemoteTokenizer needs
    /tokenizer_info, which SGLang lacks (404): the harness splits each prompt into context and continuation with the
    tokenizer.json of the folder SGLang names in /model_info (`tokenizer: local`), checked against its /tokenize."""
    plan, server = served["plan"], served["server"]
    done = []
    run_quality(["eh_capitals", "eh_choice"], _setup(plan, "completions", "local"), tmp_path / "cell", tmp_path,
                lambda: server.poll() is None, concurrency=2, limit=6, done=done,
                per_task=lambda task: {"subset": "first"})
    assert [t.task for t in done] == ["eh_capitals", "eh_choice"] and not any(t.error for t in done), done
    assert done[0].value is not None and done[0].value >= 0.5, done[0]  # SmolLM2 knows capitals (9/10 on vLLM)
    assert done[1].metric == "acc,none" and done[1].value >= 0.5, done[1]  # 0.9 of 60 on vLLM; chance 0.25
    # the output-length check (analysis/outputlength.py) reads each answer's completion tokens as SGLang counts them
    capitals = (tmp_path / "cell" / "quality" / "eh_capitals" / "samples.jsonl").read_text().splitlines()
    tokens = [json.loads(line).get("completion_tokens") for line in capitals]
    assert tokens and all(isinstance(t, int) and t > 0 for t in tokens), tokens
    same = {str(i): float(t) for i, t in enumerate(tokens)}
    assert length_ratio("eh_capitals", same, same).outcome == "within"
    summary = json.loads((tmp_path / "cell" / "quality" / "eh_choice" / "summary.json").read_text())
    assert summary["tokenizer"]["served"] == str(MODEL) and summary["tokenizer"]["engine_agrees"] is True, summary
    # each choice's log-likelihood is the sum over the continuation's tokens as SGLang itself splits them: its own
    # /tokenize counts the context, its echo gives every prompt token's log-probability
    rows = [json.loads(line) for line in (tmp_path / "cell" / "quality" / "eh_choice" / "samples.jsonl")
            .read_text().splitlines()]
    docs = {json.dumps(d["stem"]): d for d in map(json.loads, (REPO / "tasks" / "lm_eval" / "data" / "choice.jsonl")
                                                 .read_text().splitlines())}
    row = rows[0]
    doc = docs[json.dumps(row["prompt"])]
    with httpx.Client(timeout=300) as client:
        context = client.post(plan.root_url + "/tokenize", json={"prompt": row["prompt"],
                                                                 "add_special_tokens": False}).json()["tokens"]
        for choice, (loglikelihood, _greedy) in zip(doc["choices"], row["response"]):
            echoed = client.post(plan.base_url + "/completions", json={
                "model": plan.served_model_name, "prompt": f"{row['prompt']} {choice}", "max_tokens": 1,
                "temperature": 0, "logprobs": 1, "echo": True}).json()["choices"][0]["logprobs"]["token_logprobs"]
            assert abs(sum(echoed[len(context):-1]) - loglikelihood) < 1e-3, (choice, echoed, loglikelihood)
        assert client.get(plan.root_url + "/tokenizer_info").status_code == 404  # why remote cannot work


def _chat_scoring(served, folder, template_kwargs):
    plan, server = served["plan"], served["server"]
    done = []
    run_quality(["eh_capitals_chat"], _setup(plan, "chat", "none"), folder, folder,
                lambda: server.poll() is None, concurrency=2, limit=6, done=done, repeats=lambda task: 2,
                per_task=lambda task: {"stop_strings": "answer", "chat_template_kwargs": template_kwargs,
                                       "subset": "first"})
    [score] = done
    assert not score.error and [r.seed for r in score.repeats] == [1235] and not score.repeats[0].error, score
    rows = {}
    for repeat in ("", "repeat-1"):
        task_dir = folder / "quality" / "eh_capitals_chat" / repeat
        samples = [json.loads(line) for line in (task_dir / "samples.jsonl").read_text().splitlines()]
        answers = {a["prompt_hash"]: a for a in map(json.loads, (task_dir / "answers.jsonl").read_text().splitlines())}
        assert len(samples) == 6 and all(s["prompt_hash"] in answers for s in samples), (samples, answers)
        rows[repeat or "repeat-0"] = [(s, answers[s["prompt_hash"]]) for s in samples]
    return score, rows


def test_chat_scoring_with_seeds_answer_stops_and_a_reasoning_parser(served, tmp_path):
    """The story's quality path (matrices/sm120.yaml) on the real SGLang: a generation task through chat completions,
    repeats with their own seeds, stop strings applied to the answer (`stop_strings: answer`, never sent), SGLang's
    qwen3 reasoning parser on the server (as matrices/cpu-sglang.yaml's chat task).

    What the real server does with it (0.5.23, srt/entrypoints/openai/serving_chat.py _get_reasoning_from_request):
    the qwen3 parser's reasoning_default is "enable_thinking", so unless the request says enable_thinking false every
    reply is taken as thinking until a </think> that a model which does not think never writes: the whole reply lands
    in reasoning_content, the answer is empty, and the task scores 0. The task is eh_capitals_chat (one question, the
    answer in a sentence): the few-shot tasks are restated, not answered, through chat by this model. With {enable_thinking: false} the reply is the
    answer. The harness scores exactly the content and keeps the reasoning beside it, so its report says "6/6 empty"
    rather than a silent zero."""
    score, rows = _chat_scoring(served, tmp_path / "off", {"enable_thinking": False})
    # SmolLM2 names most capitals in a sentence (15 of the first 20 through this server): the chat path scores
    assert score.value >= 0.5 and score.generation.requests == 6, (score.value, score.generation)
    for repeat, pairs in rows.items():
        for sample, answer in pairs:
            # no thinking: content is the reply, and lm-eval scored that content (cut by the harness at a stop string)
            assert answer["reasoning"] is None and answer["content"], (repeat, answer)
            # (the task's filter takes the last name in the sentence)
            assert sample["response"] and sample["response"] in answer["content"].split("\n")[0], (sample, answer)
            assert answer["stop_reason"] is None, answer  # the task's stop strings were never sent
    forced, rows = _chat_scoring(served, tmp_path / "default", None)
    assert forced.value == 0.0, forced
    for repeat, pairs in rows.items():
        for sample, answer in pairs:
            # an empty answer: nothing for the task's filter to find (lm-eval's regex filter says "[invalid]")
            assert answer["content"] == "" and answer["reasoning"] and sample["response"] in ("", "[invalid]"), \
                (repeat, answer, sample["response"])
            assert sample["reasoning"] == answer["reasoning"]  # kept beside the empty answer, for the report
    # (a reply that writes <think>...</think> itself could not be had from SmolLM2: asked to copy one, it writes
    # only "The answer is Paris." - the parser's split of a real chain stays with the contract tests)


def test_tool_calls_and_json_output_through_sglangs_parsers_and_grammar(served, tmp_path):
    """The calls tasks (issue 40) end to end on the real SGLang: chat completions with tools read back by the qwen25
    tool parser, and JSON constrained by response_format through its default grammar backend (xgrammar), thinking off
    (the qwen3 reasoning parser would otherwise take the whole reply as thinking, as the chat test above shows)."""
    plan, server = served["plan"], served["server"]
    done = []
    run_quality(["eh_tools", "eh_json"], _setup(plan, "chat", "none"), tmp_path / "cell", tmp_path,
                lambda: server.poll() is None, concurrency=4, limit=12, done=done,
                per_task=lambda task: {"max_gen_toks": 64, "chat_template_kwargs": {"enable_thinking": False},
                                       **worker_spec(task, None)})  # the calls worker, as the runner asks for it
    tools, json_output = done
    assert not tools.error and not json_output.error, done
    print(f"SGLang eh_tools: valid {tools.calls.valid}/12, correct {tools.value:.3f}, {tools.calls.by_way}; "
          f"eh_json: valid {json_output.calls.valid}/12, correct {json_output.value:.3f}")
    assert tools.calls.cases == 12 and tools.calls.refused == 0 and json_output.calls.refused == 0
    rows = [json.loads(line) for line in (tmp_path / tools.samples).read_text().splitlines()]
    parsed = [r for r in rows if isinstance(r["response"], list) and r["response"]]
    assert parsed, f"no call was parsed by qwen25: {[r['answer'][:80] for r in rows]}"
    assert all(r["reasoning"] is None for r in rows)  # thinking off: the calls are the reply's, not its reasoning's
    # xgrammar constrains the JSON: most answers validate against their schema (all 12 on 2026-12-04)
    assert json_output.calls.valid >= 9, json_output.calls


def test_calls_streamed_and_not_at_two_concurrencies_and_the_radix_cache_cold_and_warm(served, tmp_path):
    """Issue 60, 1-2, on the real SGLang: the calls tasks' first cases in the four modes through its qwen25 parser
    (streamed tool calls put together from SGLang's deltas) and grammar, thinking off; and the prefix-cache check
    with the radix cache emptied through SGLang's own /flush_cache. Greedy on a healthy engine: the modes and the
    cache's two paths answer alike."""
    from evalharness.measures.calls.compare import mode_changes
    from evalharness.measures.calls.phase import run_phase as calls_modes
    from evalharness.measures.calls.spec import CallsModesSection
    from evalharness.measures.prefix_cache.phase import run_phase as prefix_cache
    from evalharness.measures.prefix_cache.spec import PrefixCacheSection
    from evalharness.phases.served import Served

    plan = served["plan"]
    on = Served(base_url=plan.base_url, root_url=plan.root_url, model=plan.served_model_name, timeout_s=300,
                retries=0, hung_after=3, cell_dir=tmp_path, engine_label=ENGINE.label,
                cache_flush_path=ENGINE.cache_flush_path)
    record, tally = calls_modes(on, CallsModesSection(enabled=True, cases=4, concurrency=4, max_tokens=64,
                                                      chat_template_kwargs={"enable_thinking": False}))
    assert record.unavailable is None and tally.failed == 0
    for task in record.tasks:
        valid = {m: task.valid(m) for m in ("alone", "streamed", "load", "load_streamed")}
        print(f"SGLang {task.task} valid by mode: {valid}")
        assert all(set(c.outcomes) == set(valid) and "error" not in c.outcomes.values() for c in task.cases)
        assert valid["alone"] > 0 and abs(valid["streamed"] - valid["alone"]) <= 1, valid
    assert not [c for c in mode_changes(record, 0.05) if c.flagged]
    cache, tally = prefix_cache(on, PrefixCacheSection(enabled=True, count=4, prefix_words=80, max_tokens=8))
    assert cache.unavailable is None and cache.flush == "POST /flush_cache" and tally.failed == 0
    assert len(cache.answered()) == 4 and cache.differing() <= 1, cache
    print(f"SGLang prefix cache: {cache.differing()}/4 changed, cached tokens warm "
          f"{[a.cached_tokens_warm for a in cache.answers]}, cold {[a.cached_tokens_cold for a in cache.answers]}")


def test_local_tokenizer_ids_equal_sglangs_tokenize(served):
    """The model folder's tokenizer.json read with the `tokenizers` library gives SGLang's own ids (it tokenizes with
    transformers), for task text, ChatML special tokens, accents, emoji and odd whitespace."""
    from evalharness.phases._local_tokenizer import PROBE, LocalTokenizer

    local = LocalTokenizer(MODEL)
    texts = [PROBE, "The opposite of hot is cold", "Q: What is 17 + 25?\nA:", "<|im_start|>user\nHi<|im_end|>\n",
             "Ünïcödé ✓ 日本語 😀", "   leading", "trailing   ", "a\r\nb", "1234567890 3.14159"]
    with httpx.Client(timeout=60) as client:
        for text in texts:
            engine = client.post(served["plan"].root_url + "/tokenize",
                                 json={"prompt": text, "add_special_tokens": False}).json()["tokens"]
            assert local.encode(text) == engine, text
            decoded = client.post(served["plan"].root_url + "/detokenize",
                                  json={"tokens": engine, "skip_special_tokens": False}).json()["text"]
            assert local.decode(engine) == decoded, text


def test_distribution_figures_exist_on_the_real_server(served, tmp_path):
    """The numerics check's path on SGLang (native /generate by token ids: SGLang's completions echo gives
    text_offset -1 for every token, so offsets cannot place a continuation): two contexts, 8 tokens, both scored."""
    from evalharness.measures.numerics import phase as numerics_phase
    from evalharness.records.cellfiles import load_scored

    plan = served["plan"]
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text('{"id": "d01", "prompt": "The capital of France is Paris. The capital of Germany is"}\n'
                       '{"id": "d02", "prompt": "Once upon a time, in a small village by the sea, there lived"}\n')
    summary, tally = numerics_phase.measure(plan.base_url, plan.served_model_name, tmp_path, tmp_path, True, 300,
                                          prompts_path=prompts, max_tokens=8, path_kind=ENGINE.logprob_path,
                                          root_url=plan.root_url)
    assert summary["path"] == "generate" and summary["contexts"] == 2, summary
    assert summary["scored"] == 2 and not summary["error"], summary
    # sampled at temperature 1, a continuation may end at the end-of-sequence token before its 8 (CI, 2026-12-02:
    # 7 + 8 on a machine without AVX-512): every position sampled is scored, by the same tokens, none invented
    contexts = {s.id: s for s in load_scored(tmp_path / "contexts.jsonl")}
    echoed = {s.id: s for s in load_scored(tmp_path / "distribution.jsonl")}
    assert sorted(contexts) == sorted(echoed) == ["d01", "d02"]
    for key, ctx in contexts.items():
        assert 1 <= len(ctx.token_ids) <= 8 and len(ctx.logprobs) == len(ctx.token_ids), ctx
        assert echoed[key].token_ids == ctx.token_ids and len(echoed[key].top) == len(ctx.token_ids), echoed[key]
        assert all(lp is not None and lp <= 0 for lp in echoed[key].logprobs), echoed[key]
    assert summary["positions"] == sum(len(c.token_ids) for c in contexts.values()), summary


def test_generate_decode_time_logprobs_equal_the_same_tokens_scored_as_a_prompt(served):
    """What the numerics check's reverse direction rests on (phases/logprobs.py GeneratePath): the log-probability
    SGLang reports for a token it sampled (decode) equals that token's when the same ids come back as a prompt
    (prefill), on the real server. Measured on 2026-12-04 (float32, torch_native attention): within TOLERANCE."""
    from evalharness.phases.logprobs import GeneratePath

    path = GeneratePath(served["plan"].root_url, 300.0, 2, 3)
    try:
        prompt = path.tokenize("The capital of France is Paris. The capital of Germany is")
        drawn = path.sample(prompt, max_tokens=16, seed=7, k=5)
        echoed = path.echo(prompt, drawn.token_ids, k=5)
    finally:
        path.close()
    assert len(prompt) == 12 and 1 <= len(drawn.token_ids) <= 16
    assert echoed.token_ids == drawn.token_ids and len(echoed.logprobs) == len(drawn.logprobs)
    gaps = [abs(a - b) for a, b in zip(drawn.logprobs, echoed.logprobs)]
    print(f"SGLang decode vs prefill log-probabilities: largest gap {max(gaps):.2e} over {len(gaps)} tokens")
    assert max(gaps) < TOLERANCE, (drawn.logprobs, echoed.logprobs)
    # and the top tokens agree where both list them: the same 5 most likely at every position
    assert [set(a) for a in drawn.top] == [set(b) for b in echoed.top]


def test_the_numerics_check_of_the_server_against_itself_holds_zero(served, tmp_path):
    """The numerics phase end to end on the real SGLang, the server against itself as a cell with the reference's
    own settings: both directions' intervals hold zero (what a relaunch of an unchanged configuration must show
    before a nonzero divergence of a real cell means anything). Before the reference's own decode-vs-prefill gap was
    subtracted (analysis/numerics.py decode_floor) this measured KL(cell||ref) 7.3e-6 [5.7e-6, 8.9e-6]; after,
    6.3e-7 [-1.4e-7, 1.5e-6] on the shipped 24 contexts (2026-12-04)."""
    from evalharness.analysis.numerics import compare_distributions
    from evalharness.measures.numerics import phase as numerics_phase
    from evalharness.phases import distribution
    from evalharness.phases.logprobs import open_path
    from evalharness.records.cellfiles import load_scored, save_scored

    plan = served["plan"]
    ref_dir, cell_dir = tmp_path / "ref", tmp_path / "cell"
    ref_dir.mkdir()
    cell_dir.mkdir()
    # the shipped 24 contexts (cut to 256 tokens, as the demos do): an interval over 6 contexts undercovers
    common = dict(max_tokens=12, max_context_tokens=256, path_kind=ENGINE.logprob_path, root_url=plan.root_url)
    ref, _ = numerics_phase.measure(plan.base_url, plan.served_model_name, ref_dir, ref_dir, True, 300, **common)
    cell, _ = numerics_phase.measure(plan.base_url, plan.served_model_name, cell_dir, ref_dir, False, 300, **common)
    assert ref["error"] is None and cell["error"] is None, (ref, cell)
    scorer = open_path(ENGINE.logprob_path, plan.base_url, plan.root_url, plan.served_model_name, 300.0)
    try:
        save_scored(cell_dir / "reverse_scored.jsonl",
                    distribution.score_samples(scorer, load_scored(cell_dir / "own_samples.jsonl")))
    finally:
        scorer.close()
    contexts = load_scored(ref_dir / "contexts.jsonl")
    out = compare_distributions(load_scored(ref_dir / "distribution.jsonl"), load_scored(cell_dir / "distribution.jsonl"),
                                load_scored(cell_dir / "own_samples.jsonl"),
                                load_scored(cell_dir / "reverse_scored.jsonl"), contexts)
    print(f"SGLang against itself: forward {out.forward.estimate:.2e} [{out.forward.ci_low:.2e}, "
          f"{out.forward.ci_high:.2e}], reverse {out.reverse.estimate:.2e} [{out.reverse.ci_low:.2e}, "
          f"{out.reverse.ci_high:.2e}], top token agreed {out.same_top_token:.3f}")
    assert out.forward.positions == sum(len(c.token_ids) for c in contexts) > 0
    for direction in (out.forward, out.reverse):
        assert direction.ci_low <= FLOAT_RESOLUTION and direction.ci_high >= -FLOAT_RESOLUTION, direction
        assert abs(direction.estimate) < 1e-3, direction
    assert out.same_top_token > 0.99 and out.disjoint_topk == 0


def test_a_real_startup_crash_is_classified_from_its_log(tmp_path):
    require_sglang()
    _, _, server = _launch(tmp_path, "{args: {--attention-backend: flashinfer}}", "flashinfer")
    try:
        readiness = server.wait_ready(600)
    finally:
        teardown = server.stop(grace_s=30, terminate=ENGINE.terminate)
    assert readiness.outcome == "exited" and readiness.returncode != 0
    assert teardown.leftover == []
    log = server.log_path.read_text(errors="replace")
    crash = classify_crash(log, LOG_RULES)
    assert crash.kind == "unsupported_kernel", crash
    assert "flashinfer_python with minimum required version 0.7.2 is not installed" in crash.line
    KEEP.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(server.log_path, KEEP / "sglang-0.5.23-cpu-flashinfer-missing.log")
    proc = run_harness("diagnose", str(server.log_path), "--json", timeout=120)
    assert proc.returncode == 0, proc.stderr
    diagnosis = json.loads(proc.stdout)
    assert diagnosis["engine"] == "sglang" and diagnosis["engine_guessed"]
    assert diagnosis["crashed"] and diagnosis["crash"]["kind"] == "unsupported_kernel"
    assert "assert_pkg_version" in diagnosis["crash_source"]


def test_diagnose_on_the_served_log_finds_no_crash(served):
    proc = run_harness("diagnose", str(served["server"].log_path), "--json", timeout=120)
    assert proc.returncode == 0, proc.stderr
    diagnosis = json.loads(proc.stdout)
    assert diagnosis["engine"] == "sglang" and not diagnosis["crashed"], diagnosis.get("crash")


def test_teardown_leaves_nothing_of_the_real_tree(served):
    """Last in the module: stops the shared server. The tree is the launcher, sglang::scheduler (no " TP0" at TP 1),
    sglang::detokenizer and a multiprocessing resource tracker, all in the launcher's process group."""
    server = served["server"]
    launcher = psutil.Process(server.pid)
    family = [launcher, *launcher.children(recursive=True)]
    names = {p.pid: " ".join(p.cmdline()) or p.name() for p in family}
    titles = " | ".join(names.values())
    assert "sglang::scheduler" in titles and "sglang::detokenizer" in titles, titles
    assert "sglang::scheduler_TP0" not in titles and "TP0" not in titles
    assert "resource_tracker" in titles, titles
    assert all(os.getpgid(p.pid) == server.pid for p in family)
    begin = time.monotonic()
    teardown = server.stop(grace_s=30, terminate=ENGINE.terminate)
    assert teardown.sigterm_to == "launcher" and teardown.leftover == []
    assert not [p for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    print(f"teardown {time.monotonic() - begin:.1f}s, signals {teardown.signals}")
    KEEP.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(server.log_path, KEEP / "sglang-0.5.23-cpu-serve.log")

