"""The quality phase's requests (phases/_lmeval_requests.py, _lmeval_models.py): streamed answers put back
together as the engines send them, the journal that a retry or resume answers from, judgement by silence rather than
by a wall clock, and stop strings kept out of the reasoning.

The HTTP tests run a local aiohttp server that streams at a set pace: the real engine cannot be made to stream one
answer for longer than a timeout with steady gaps, or to fall silent mid-answer (the fault proxy's stall covers the
second against the real engine in the integration tests).
"""

from __future__ import annotations

import asyncio
import json
import time

import aiohttp
import pytest
from aiohttp import web
from lm_eval.models.api_models import JsonChatStr

from evalharness.phases._lmeval_models import RecordingChat, cut_at_stops
from evalharness.phases._lmeval_requests import Journal, StreamError, assemble, request_key


def test_a_chat_stream_is_put_back_together_as_the_non_streaming_answer():
    # SGLang 0.5.23's shape: a role-only first chunk, content and reasoning deltas, a separate finish chunk
    # carrying matched_stop, and a usage-only last chunk (srt/entrypoints/openai/serving_chat.py)
    events = [{"id": "c1", "choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]},
              {"id": "c1", "choices": [{"index": 0, "delta": {"reasoning_content": "let me "}}]},
              {"id": "c1", "choices": [{"index": 0, "delta": {"reasoning_content": "see"}}]},
              {"id": "c1", "choices": [{"index": 0, "delta": {"content": "#### "}}]},
              {"id": "c1", "choices": [{"index": 0, "delta": {"content": "4"}}]},
              {"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop", "matched_stop": 2}]},
              {"id": "c1", "choices": [], "usage": {"completion_tokens": 7, "prompt_tokens": 3}}]
    out = assemble(events, chat=True)
    assert out["choices"] == [{"index": 0, "message": {"role": "assistant", "content": "#### 4",
                                                       "reasoning_content": "let me see"},
                               "finish_reason": "stop", "matched_stop": 2}]
    assert out["usage"]["completion_tokens"] == 7


def test_a_completions_stream_keeps_vllms_stop_reason():
    events = [{"choices": [{"index": 0, "text": "Paris", "finish_reason": None}]},
              {"choices": [{"index": 0, "text": "\n", "finish_reason": "stop", "stop_reason": "\n\n"}],
               "usage": {"completion_tokens": 2}}]
    out = assemble(events, chat=False)
    assert out["choices"] == [{"index": 0, "text": "Paris\n", "finish_reason": "stop", "stop_reason": "\n\n"}]


def test_a_stream_that_ends_unfinished_or_with_an_error_is_a_failed_attempt():
    with pytest.raises(StreamError, match="no finish_reason"):
        assemble([{"choices": [{"index": 0, "delta": {"content": "half"}}]}], chat=True)
    with pytest.raises(StreamError, match="error in the stream"):
        assemble([{"error": {"message": "engine died", "code": 500}}], chat=True)


def test_the_journal_keeps_answers_across_attempts_and_skips_a_line_cut_by_a_kill(tmp_path):
    path, failures = tmp_path / "requests.jsonl", tmp_path / "failures.jsonl"
    first = Journal(str(path), str(failures))
    first.keep("k1", {"choices": [{"text": "a"}]})
    first.failed("k2", TimeoutError("silent for 5s"))
    with open(path, "a") as handle:
        handle.write('{"key": "k2", "outp')  # the attempt was killed while writing
    again = Journal(str(path), str(failures))
    assert again.get("k1") == {"choices": [{"text": "a"}]} and again.get("k2") is None and again.replayed == 1
    assert json.loads(failures.read_text())["error"] == "TimeoutError: silent for 5s"
    # the key is the payload: another seed is another request
    assert request_key({"seed": 1, "messages": []}) != request_key({"seed": 2, "messages": []})
    assert request_key({"a": 1, "b": 2}) == request_key({"b": 2, "a": 1})


def test_stop_strings_cut_the_answer_at_the_first_match_only():
    assert cut_at_stops("42\nQuestion: next\n\nmore", ("\n\n", "Question:")) == ("42\n", "Question:")
    assert cut_at_stops("42", ("Question:",)) == ("42", None)


def _chat_model(tmp_path, url: str, **kwargs) -> RecordingChat:
    return RecordingChat(base_url=url, model="m", tokenizer_backend=None, timeout=1,
                         journal_path=str(tmp_path / "requests.jsonl"),
                         failures_path=str(tmp_path / "failures.jsonl"), record_path=str(tmp_path / "answers.jsonl"),
                         **kwargs)


def test_in_answer_mode_stop_strings_are_not_sent_and_cut_the_content_after_the_reasoning(tmp_path):
    lm = _chat_model(tmp_path, "http://127.0.0.1:9/v1/chat/completions")
    messages = lm.create_message([JsonChatStr(json.dumps([{"role": "user", "content": "2+2?"}]))])
    payload = lm._create_payload(messages, generate=True, gen_kwargs={"until": ["Question:"], "max_gen_toks": 8})
    assert "stop" not in payload
    choice = {"index": 0, "finish_reason": "stop",
              "message": {"content": "#### 4\nQuestion: 3+3?", "reasoning_content": "Question: is it 4? yes"}}
    assert lm.parse_generations(outputs={"choices": [choice]}) == ["#### 4\n"]
    [record] = [json.loads(line) for line in (tmp_path / "answers.jsonl").read_text().splitlines()]
    assert record["answer_stop"] == "Question:" and record["reasoning"] == "Question: is it 4? yes"
    engine = _chat_model(tmp_path, "http://127.0.0.1:9/v1/chat/completions", stop_strings="engine")
    messages = engine.create_message([JsonChatStr(json.dumps([{"role": "user", "content": "2+2?"}]))])
    sent = engine._create_payload(messages, generate=True, gen_kwargs={"until": ["Question:"]})
    assert sent["stop"] == ["Question:"]


class PacedServer:
    """Streams a chat answer of `chunks` pieces, `gap_s` apart; `silent_after` pieces, then silence."""

    def __init__(self, chunks: int, gap_s: float, silent_after: int | None = None):
        self.chunks, self.gap_s, self.silent_after = chunks, gap_s, silent_after
        self.requests = 0
        self.failed_after: float | None = None

    async def chat(self, request: web.Request) -> web.StreamResponse:
        self.requests += 1
        body = await request.json()
        assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for i in range(self.chunks):
            if self.silent_after is not None and i == self.silent_after:
                await asyncio.sleep(3600)
            await asyncio.sleep(self.gap_s)
            event = {"choices": [{"index": 0, "delta": {"content": f"t{i} "}, "finish_reason": None}]}
            await response.write(f"data: {json.dumps(event)}\n\n".encode())
        done = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": {"completion_tokens": 9}}
        await response.write(f"data: {json.dumps(done)}\n\ndata: [DONE]\n\n".encode())
        await response.write_eof()
        return response


async def _ask(lm: RecordingChat, server: PacedServer) -> tuple[list[str], float]:
    app = web.Application()
    app.router.add_post("/v1/chat/completions", server.chat)
    runner = web.AppRunner(app, shutdown_timeout=0.5)  # a silent handler is cut, not waited for
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    lm.base_url = f"http://127.0.0.1:{port}/v1/chat/completions"
    begin = time.monotonic()
    try:
        async with aiohttp.ClientSession() as session:
            answers = await lm.amodel_call(session, asyncio.Semaphore(1),
                                           [JsonChatStr(json.dumps([{"role": "user", "content": "hi"}]))],
                                           generate=True, gen_kwargs={"max_gen_toks": 9})
        return answers, time.monotonic() - begin
    except Exception:
        server.failed_after = time.monotonic() - begin
        raise
    finally:
        await runner.cleanup()


def test_a_request_that_streams_past_its_timeout_with_tokens_coming_is_not_a_timeout(tmp_path):
    lm = _chat_model(tmp_path, "")  # timeout 1 s: each gap is 0.25 s, the whole answer about 2 s
    server = PacedServer(chunks=8, gap_s=0.25)
    answers, seconds = asyncio.run(_ask(lm, server))
    assert seconds > 1.5 and answers == [" ".join(f"t{i}" for i in range(8)) + " "]
    # asked again (a retry, a resumed run): answered from the journal, nothing sent
    again = _chat_model(tmp_path, "")
    assert asyncio.run(_ask(again, server))[0] == answers and server.requests == 1 and again._journal.replayed == 1


def test_a_request_that_goes_silent_is_a_timeout_and_logged_as_a_failed_attempt(tmp_path):
    lm = _chat_model(tmp_path, "")
    server = PacedServer(chunks=8, gap_s=0.05, silent_after=3)
    with pytest.raises((asyncio.TimeoutError, aiohttp.ServerTimeoutError)):
        asyncio.run(_ask(lm, server))
    assert 1.0 <= server.failed_after < 10  # one timeout of silence after the third piece, not an hour
    [failure] = [json.loads(line) for line in (tmp_path / "failures.jsonl").read_text().splitlines()]
    assert "Timeout" in failure["error"] and not (tmp_path / "requests.jsonl").exists()


def test_a_limit_keeps_a_seeded_random_subset_of_each_task_and_a_screened_share_is_part_of_it(monkeypatch):
    from evalharness.phases._lmeval_worker import _setup, document_subsets
    from evalharness.phases.quality import SHIPPED_TASKS

    monkeypatch.chdir(SHIPPED_TASKS)  # _setup changes into the tasks folder, as the worker process does
    manager = _setup({"include_path": str(SHIPPED_TASKS)})
    chosen, population = document_subsets(manager, "eh_capitals", 20, seed=1234)
    again, _ = document_subsets(manager, "eh_capitals", 20, seed=1234)
    other, _ = document_subsets(manager, "eh_capitals", 20, seed=99)
    assert population == {"eh_capitals": 159} and len(chosen["eh_capitals"]) == 20
    assert chosen == again and chosen != other  # the same documents in every cell; another seed, another sample
    assert chosen["eh_capitals"] == sorted(chosen["eh_capitals"]) and chosen["eh_capitals"] != list(range(20))
    # a screened cell's quarter: 5 of the same 20, so it pairs with the reference's answers to them
    quarter, _ = document_subsets(manager, "eh_capitals", 20, seed=1234, fraction=0.25)
    assert len(quarter["eh_capitals"]) == 5 and set(quarter["eh_capitals"]) <= set(chosen["eh_capitals"])
    whole, _ = document_subsets(manager, "eh_capitals", None, seed=1234, fraction=0.25)
    assert len(whole["eh_capitals"]) == 40  # a quarter of all 159, rounded up
    first, _ = document_subsets(manager, "eh_capitals", 20, seed=1234, fraction=0.5, first=True)
    assert first["eh_capitals"] == list(range(10))


def test_a_headline_the_task_does_not_offer_is_named_before_any_request(monkeypatch):
    from evalharness.phases._lmeval_worker import _setup, headline_problem
    from evalharness.phases.quality import SHIPPED_TASKS

    monkeypatch.chdir(SHIPPED_TASKS)
    manager = _setup({"include_path": str(SHIPPED_TASKS)})
    assert headline_problem(manager, "eh_capitals", "exact_match/strip") is None
    assert headline_problem(manager, "eh_capitals", None) is None
    problem = headline_problem(manager, "eh_capitals", "exact_match/flexible-extract")
    assert problem == ("headline 'exact_match,flexible-extract' is not a figure of this task; its configs offer "
                       "exact_match,strip")


def test_a_task_the_matrix_asks_too_much_of_fails_once_without_retries(tmp_path, monkeypatch):
    import subprocess

    from evalharness.phases import quality

    calls = []

    def worker(argv, stdout=None, **kwargs):
        calls.append(argv)
        stdout.write(b"task t: quality.task_settings.t.headline 'x,y' is not a figure of this task\n")
        return subprocess.CompletedProcess(argv, quality.CONFIG_ERROR)

    monkeypatch.setattr(quality.subprocess, "run", worker)
    score = quality.run_task("t", {"base_url": "u", "seed": 1}, tmp_path / "t", tmp_path, lambda: True, 2, 10)
    assert len(calls) == 1 and score.attempts == 1
    assert score.error == "task t: quality.task_settings.t.headline 'x,y' is not a figure of this task"
