"""Reasoning models: the recording lm-eval clients keep reasoning and finish_reason apart from the scored content,
keyed by lm-eval's own prompt hash; the summary counts truncation and reasoning per request; probes judge both parts;
the matrix carries the generation settings per task and local data, checked before any launch."""

import asyncio
import json
from pathlib import Path

import pytest
from lm_eval.models.api_models import JsonChatStr
from lm_eval.utils import hash_string

from evalharness.cli import main
from evalharness.phases._lmeval_models import RecordingChat, answer_record, prompt_key
from evalharness.phases._lmeval_results import HeadlineMissing, config_headline, summarize
from evalharness.phases.probes import Probe, judge_outputs
from evalharness.records.measures import ProbeOutput


def _choice(content, reasoning=None, finish="stop", index=0):
    message = {"role": "assistant", "content": content}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    return {"index": index, "message": message, "finish_reason": finish}


def test_the_prompt_key_is_lm_evals_prompt_hash():
    chat = JsonChatStr(json.dumps([{"role": "user", "content": "2+2?"}]))
    assert prompt_key(chat) == hash_string(chat)
    assert prompt_key("Question: 2+2?\nAnswer:") == hash_string("Question: 2+2?\nAnswer:")


def test_reasoning_is_kept_apart_and_only_the_content_is_scored(tmp_path):
    side = tmp_path / "answers.jsonl"
    lm = RecordingChat(base_url="http://127.0.0.1:9/v1/chat/completions", model="m", record_path=str(side),
                       tokenizer_backend=None, chat_template_kwargs={"enable_thinking": True})
    prompts = [JsonChatStr(json.dumps([{"role": "user", "content": f"q{i}"}])) for i in range(6)]

    async def ask(i: int) -> list[str]:
        lm.create_message([prompts[i]])
        await asyncio.sleep(0.01 * (6 - i))  # answers come back in the other order
        out = {"choices": [_choice(f"#### {i}", reasoning=f"#### 99 is wrong, {i} is right",
                                   finish="length" if i % 2 else "stop")],
               "usage": {"completion_tokens": 10 + i}}
        return lm.parse_generations(outputs=out)

    async def everything():
        return await asyncio.gather(*(asyncio.create_task(ask(i)) for i in range(6)))

    answers = asyncio.run(everything())
    assert [a[0] for a in answers] == [f"#### {i}" for i in range(6)]  # what lm-eval scores: content only
    records = {r["prompt_hash"]: r for r in map(json.loads, side.read_text().splitlines())}
    for i, prompt in enumerate(prompts):
        record = records[hash_string(prompt)]
        assert record["reasoning"] == f"#### 99 is wrong, {i} is right" and record["content"] == f"#### {i}"
        assert record["completion_tokens"] == 10 + i
    payload = lm._create_payload([{"role": "user", "content": "x"}], generate=True, gen_kwargs={"until": ["\n"]})
    assert payload["chat_template_kwargs"] == {"enable_thinking": True}


def test_without_a_reasoning_parser_the_think_end_token_splits_the_content(tmp_path):
    record = answer_record("k", _choice("<think>so 4</think>The answer is 4"), None, "</think>")
    assert record["reasoning"] == "<think>so 4"
    cut = answer_record("k", _choice("<think>still thinking", finish="length"), None, "</think>")
    assert cut["reasoning"] == "<think>still thinking"
    lm = RecordingChat(base_url="http://127.0.0.1:9/v1/chat/completions", model="m", tokenizer_backend=None,
                       think_end_token="</think>")
    lm.create_message([JsonChatStr("[]")])
    assert lm.parse_generations(outputs={"choices": [_choice("<think>still thinking", finish="length")]}) == [""]
    assert lm.parse_generations(outputs={"choices": [_choice("<think>x</think> 4")]}) == ["4"]


def _sample(doc_id, filt, value, prompt_hash, **metrics):
    return {"doc_id": doc_id, "doc_hash": f"d{doc_id}", "prompt_hash": prompt_hash, "target": "4",
            "resps": [["#### 4"]], "filtered_resps": ["4"], "filter": filt, "metrics": ["exact_match"],
            "exact_match": value, **metrics}


GSM8K_CONFIG = {"metric_list": [{"metric": "exact_match"}],
                "filter_list": [{"name": "strict-match"}, {"name": "flexible-extract"}]}


def test_summary_of_a_multi_filter_task_names_the_configs_headline_and_counts_each_request_once():
    results = {"results": {"gsm8k": {"alias": "gsm8k", "exact_match,strict-match": 0.5,
                                     "exact_match_stderr,strict-match": 0.1, "exact_match,flexible-extract": 1.0}},
               "configs": {"gsm8k": GSM8K_CONFIG}, "versions": {"gsm8k": 3.0},
               "n-samples": {"gsm8k": {"effective": 2}},
               "samples": {"gsm8k": [_sample(0, "strict-match", 1.0, "p0"), _sample(0, "flexible-extract", 1.0, "p0"),
                                     _sample(1, "strict-match", 0.0, "p1"), _sample(1, "flexible-extract", 1.0, "p1")]}}
    answers = {"p0": {"prompt_hash": "p0", "finish_reason": "stop", "reasoning": "abcd", "completion_tokens": 10,
                      "content": "#### 4", "stop_reason": "Question:"},
               "p1": {"prompt_hash": "p1", "finish_reason": "length", "reasoning": None, "completion_tokens": 20,
                      "content": " "}}
    summary, rows = summarize("gsm8k", results, answers, failures=[{"key": "a"}, {"key": "a"}, {"key": "b"}])
    assert (summary["headline"], summary["value"], summary["stderr"]) == ("exact_match,strict-match", 0.5, 0.1)
    assert len(rows) == 4 and rows[0]["reasoning"] == "abcd" and rows[0]["task"] == "gsm8k"
    assert summary["generation"] == {"requests": 2, "truncated": 1, "looping": 0, "truncated_looping": 0,
                                     "with_reasoning": 1, "mean_completion_tokens": 15.0,
                                     "mean_reasoning_chars": 2.0, "mean_reasoning_tokens": None, "empty": 1,
                                     "empty_with_reasoning": 0,
                                     "stop_string": 1, "failed_attempts": 3, "retried_requests": 2}
    assert rows[0]["stop_reason"] == "Question:"
    # the matrix's headline choice: the flexible figure judged, the strict one kept beside it
    chosen, _ = summarize("gsm8k", results, answers, headline="exact_match/flexible-extract")
    assert (chosen["headline"], chosen["value"]) == ("exact_match,flexible-extract", 1.0)
    with pytest.raises(HeadlineMissing, match="'exact_match,loose'.*exact_match,strict-match"):
        summarize("gsm8k", results, answers, headline="exact_match,loose")


def test_summary_of_a_group_keeps_every_subtask_and_lm_evals_pooled_value():
    subs = ["mmlu_pro_biology", "mmlu_pro_law"]
    config = {"metric_list": [{"metric": "exact_match"}], "filter_list": [{"name": "custom-extract"}]}
    results = {"results": {"mmlu_pro_biology": {"exact_match,custom-extract": 1.0},
                           "mmlu_pro_law": {"exact_match,custom-extract": 0.0},
                           "mmlu_pro": {"alias": "mmlu_pro", "sample_len": 3, "exact_match,custom-extract": 2 / 3}},
               "group_subtasks": {"mmlu_pro": subs}, "configs": {s: config for s in subs},
               "versions": {"mmlu_pro": "2.0", "mmlu_pro_biology": 3.1, "mmlu_pro_law": 3.1},
               "n-samples": {"mmlu_pro_biology": {"effective": 2}, "mmlu_pro_law": {"effective": 1}},
               "samples": {"mmlu_pro_biology": [_sample(0, "custom-extract", 1.0, "a"),
                                                _sample(1, "custom-extract", 1.0, "b")],
                           "mmlu_pro_law": [_sample(0, "custom-extract", 0.0, "c")]}}
    summary, rows = summarize("mmlu_pro", results, {})
    assert summary["headline"] == "exact_match,custom-extract" and summary["value"] == pytest.approx(2 / 3)
    assert summary["n"] == 3 and list(summary["subtasks"]) == subs and summary["version"] == "2.0"
    assert [r["task"] for r in rows] == ["mmlu_pro_biology", "mmlu_pro_biology", "mmlu_pro_law"]
    assert summary["generation"] is None


def test_ifeval_headline_is_its_first_metric():
    config = {"metric_list": [{"metric": "prompt_level_strict_acc"}, {"metric": "inst_level_strict_acc"}]}
    metrics = {"prompt_level_strict_acc,none": 0.3, "inst_level_strict_acc,none": 0.5}
    assert config_headline(config, metrics) == "prompt_level_strict_acc,none"
    assert config_headline(None, {"acc,none": 0.4, "acc_norm,none": 0.5}) == "acc,none"


PROBE = Probe(id="p", messages=[{"role": "user", "content": "Name a colour."}], expect_stop=True)


@pytest.mark.parametrize("output, reasoning, finish, garbage", [
    ("", "The user wants a colour. Blue is a common colour, so I will answer blue", "length", False),  # only reasons
    ("Blue.", "The user wants a colour; blue is fine.", "stop", False),
    ("Blue.", "}{][)(*&^%$#@!~}{][)(*&^%$#@!~}{][)(*&^%$#@!~}{][)(*&^%$#@!~", "stop", True),  # soup reasoning
    ("", None, "stop", True),  # no answer and no reasoning: empty
])
def test_probes_judge_the_answer_and_the_reasoning(output, reasoning, finish, garbage):
    out = ProbeOutput(id="p", prompt="Name a colour.", output=output, reasoning=reasoning, finish_reason=finish)
    summary = judge_outputs([out], [PROBE], {}, 0.5, 0.3, 1.0)
    assert out.garbage is garbage, out.findings
    assert summary.flagged == int(garbage)
    if reasoning and garbage:
        assert any(f["detector"].startswith("reasoning:") for f in out.findings)


def _matrix(tmp_path: Path, quality: str) -> Path:
    path = tmp_path / "m.yaml"
    path.write_text(f"name: t\nengine: external\nbase_url: http://127.0.0.1:9/v1\nmodel: m\nquality: {quality}\n")
    return path


def test_absent_local_data_is_exit_2_naming_the_task_before_anything_runs(tmp_path, capsys):
    present = tmp_path / "train.jsonl"
    present.write_text("{}\n")
    matrix = _matrix(tmp_path, "{tasks: [gsm8k], include_defaults: true, data: {gsm8k: {data_files: "
                               "{train: ./train.jsonl, test: ./test.jsonl}}}}")
    assert main(["run", "--matrix", str(matrix), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "task gsm8k: data file" in err and "test.jsonl (split test) does not exist" in err
    assert "nothing was launched" in err and not (tmp_path / "out").exists()


def test_unknown_tasks_in_data_or_settings_are_refused(tmp_path, capsys):
    matrix = _matrix(tmp_path, "{tasks: [gsm8k], task_settings: {gsm8: {max_gen_toks: 8}}}")
    assert main(["validate", "--matrix", str(matrix)]) == 2
    assert "did you mean 'gsm8k'" in capsys.readouterr().err


def test_prepared_data_keeps_the_hub_schema_and_prints_the_matrix_block(tmp_path):
    import datasets

    from scripts.prepare_standard_data import data_block, write_splits

    rows = [{"key": 1, "prompt": "Write 3 words.", "instruction_id_list": ["length_constraints:number_words"],
             "kwargs": [{"num_words": 3, "relation": "less than"}]}]
    files = write_splits(datasets.DatasetDict({"train": datasets.Dataset.from_list(rows)}), ["train"],
                         tmp_path / "ifeval")
    loaded = datasets.load_dataset("json", data_files=files)["train"]
    assert loaded[0] == rows[0]
    assert "ifeval: {data_files: {train: " in data_block({"ifeval": files})


@pytest.mark.parametrize("extra, kept", [({"stop_reason": "\n\n"}, "\n\n"), ({"matched_stop": "Question:"}, "Question:"),
                                         ({"stop_reason": None}, None), ({"matched_stop": 2}, None), ({}, None)])
def test_the_stop_that_ended_an_answer_is_kept_from_vllm_or_sglang(extra, kept):
    # a stop string is kept; a stop token id (an int) ended it as the end of sequence does
    assert answer_record("k", {**_choice("4"), **extra}, None, None)["stop_reason"] == kept


def test_a_sample_row_keeps_the_prompt_lm_eval_sent():
    from evalharness.phases._lmeval_results import prompt_of, sample_row

    sample = {"doc_id": 0, "arguments": [("Q: 2+2?\nA:", {"until": ["\n"]})], "resps": [["4"]],
              "filtered_resps": ["4"], "metrics": []}
    assert prompt_of(sample) == "Q: 2+2?\nA:"
    assert prompt_of({"arguments": {"gen_args_0": {"arg_0": "json form", "arg_1": "x"}}}) == "json form"
    assert prompt_of({"arguments": [(JsonChatStr('[{"role": "user"}]'), {})]}) == '[{"role": "user"}]'
    assert prompt_of({}) is None
    row = sample_row("t", sample, {"finish_reason": "stop", "stop_reason": "\n"})
    assert row["prompt"] == "Q: 2+2?\nA:" and row["stop_reason"] == "\n"
