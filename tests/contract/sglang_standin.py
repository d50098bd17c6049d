"""A stand-in SGLang 0.5.23 server, written from the pinned wheel's source (requirements/sglang-engine.txt), for what
the real SGLang on this CPU cannot show (tests/integration/test_sglang_real.py runs the real one): GPU memory and its
release, TP 8, SM120 kernel crashes, NEXTN speculative decoding and its counters. It tests OUR side of the contract:
every behaviour below cites the SGLang file it copies, and nothing here is a guess about what SGLang does.

Launched exactly as the harness launches SGLang: `python sglang_standin.py --model-path M --host H --port P
--served-model-name N [SGLang flags]`. Process layout (sglang/srt/entrypoints/engine.py, http_server.py), all in the
launcher's process group:
  - this launcher (HTTP server + tokenizer manager). Its graceful SIGTERM handler is installed at the first request
    (sglang/srt/managers/tokenizer_manager.py: auto_create_handle_loop; SGLang's own warm-up /generate before
    "fired up" is that request), so a SIGTERM while loading kills it outright. With the handler it drains, sends
    ShutdownReq to the scheduler (here SIGUSR1), waits _SCHEDULER_EXIT_TIMEOUT_SECS = 15 s for it, logs "Schedulers
    still alive ..." and kills it if it did not exit, then exits. A scheduler crash ends with the launcher SIGKILLed
    (exit -9: launch_phase_sigquit_handler, kill_process_tree with the parent included);
  - one scheduler child (titled "sglang::scheduler", " TP0" and the TP suffix only when tp_size > 1,
    sglang/srt/managers/scheduler.py) with NO SIGTERM handler and PR_SET_PDEATHSIG=SIGKILL
    (sglang/srt/utils/common.py: kill_itself_when_parent_died). It "holds GPU memory" (the fake nvidia-smi beside this
    file reads STANDIN_GPU_FILE) and releases it only when asked by ShutdownReq (sglang/srt/managers/scheduler.py:
    gracefully_exit, the release before exit): a SIGTERM kills it holding the memory;
  - one detokenizer child ("sglang::detokenizer", sglang/srt/managers/detokenizer_manager.py), dies with its parent.
Environment (the test's knobs): STANDIN_CRASH=flashinfer|oom_kill|port, STANDIN_PHANTOM=1 (one request never
finishes: /flush_cache is refused), STANDIN_IGNORE_SHUTDOWN=1 (the scheduler does not release), STANDIN_TIME_SCALE
(SGLang's waits, 15 s, 5 s, the flush timeout, scaled; default 0.02), STANDIN_SERVER_TPUT_FACTOR (what its Decode batch
lines claim, times the truth), STANDIN_GPU_FILE, STANDIN_TRUTH (where each finished request's tokens and verify steps
are appended, one JSON per line).
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import math
import os
import random
import signal
import subprocess
import sys
import time

if sys.argv[1:2] not in (["--scheduler"], ["--detokenizer"]):  # the children start fast without the HTTP stack
    from aiohttp import web

VERSION = "0.5.23"
SCALE = float(os.environ.get("STANDIN_TIME_SCALE", "0.02"))
GPU_FILE = os.environ.get("STANDIN_GPU_FILE")
STEP_S = 0.004  # one decode step
DECODE_LOG_INTERVAL = 40  # sglang/srt/arg_groups/fields/observability.py: decode_log_interval = 40
HELD_MIB = 1500


def _tp_size(argv: list[str]) -> int:
    for flag in ("--tp-size", "--tp", "--tensor-parallel-size"):
        if flag in argv[:-1]:
            return int(argv[argv.index(flag) + 1])
    return int(os.environ.get("STANDIN_TP_SIZE", "1"))


TP_SIZE = _tp_size(sys.argv)


def log(message: str, tp: bool = False) -> None:
    # sglang/srt/utils/common.py: configure_logger: "[%(asctime)s{prefix}] %(message)s", no level, no file:line;
    # the scheduler's prefix has " TP{rank}" only when tp_size > 1 (sglang/srt/managers/scheduler.py), so a TP 1
    # server logs "[time] message" from every process
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    print(f"[{stamp}{' TP0' if tp and TP_SIZE > 1 else ''}] {message}", flush=True)


def gpu_hold(mib: int) -> None:
    if GPU_FILE:
        with open(GPU_FILE, "w") as f:
            json.dump({"held_mib": mib, "pid": os.getpid()}, f)


def detokenizer_main() -> None:
    """The detokenizer child (sglang/srt/managers/detokenizer_manager.py: run_detokenizer_process, titled
    "sglang::detokenizer"): no SIGTERM handler either, dies with its parent (kill_itself_when_parent_died)."""
    if sys.platform == "linux":
        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)
    while True:
        time.sleep(3600)


def scheduler_main(ready_fd: int) -> None:
    """The scheduler child: no SIGTERM handler (the default kills it), dies with its parent, releases GPU memory only
    on ShutdownReq (SIGUSR1 here); says "ready" through a pipe once loaded (engine.py: _wait_for_scheduler_ready)."""
    if sys.platform == "linux":  # sglang/srt/utils/common.py: kill_itself_when_parent_died
        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)
    if os.environ.get("STANDIN_CRASH") == "oom_kill":
        os.kill(os.getpid(), signal.SIGKILL)  # what the OS OOM killer does while weights load
    gpu_hold(HELD_MIB)
    log("Load weight begin. avail mem=94.12 GB", tp=True)  # sglang/srt/model_executor/model_runner.py

    def shutdown(signum, frame):  # ShutdownReq (sglang/srt/managers/scheduler.py sets gracefully_exit)
        if os.environ.get("STANDIN_IGNORE_SHUTDOWN") == "1":
            return
        time.sleep(0.2)  # releasing pinned memory and the CUDA context in userspace
        gpu_hold(0)
        log("released GPU memory; scheduler exiting", tp=True)
        os._exit(0)

    signal.signal(signal.SIGUSR1, shutdown)
    os.write(ready_fd, b"ready")
    os.close(ready_fd)
    while True:
        time.sleep(3600)


class Server:
    def __init__(self, argv: list[str]):
        self.args = parse_flags(argv)
        self.running = 0  # requests in flight
        self.phantom = os.environ.get("STANDIN_PHANTOM") == "1"
        self.totals = {"generation_tokens": 0.0, "spec_verify_calls": 0.0}
        # sglang/srt/managers/scheduler_components/metrics_reporter.py: per-interval and lifetime spec counters
        self.interval = {"accept": 0, "forward": 0, "tokens": 0, "steps": 0, "tic": time.perf_counter()}
        self.lifetime = {"accept": 0, "forward": 0}
        self.speculative = self.args.get("--speculative-algorithm")
        self.started = time.time()
        self.ready = False
        self.gracefully_exit = False
        self.scheduler: subprocess.Popen | None = None
        self.detokenizer: subprocess.Popen | None = None
        self.on_first_request = lambda: None  # installs the graceful SIGTERM handler (main)

    # ---- HTTP: sglang/srt/entrypoints/http_server.py ----
    async def health_generate(self, request: web.Request) -> web.Response:
        if self.gracefully_exit or not self.ready:  # ServerStatus.Starting / gracefully_exit: 503
            return web.Response(status=503)
        await asyncio.sleep(0.01)  # a one-token generation goes through the scheduler
        return web.Response(status=200)

    async def server_info(self, request: web.Request) -> web.Response:
        if request.path == "/get_server_info":
            log("Endpoint '/get_server_info' is deprecated and will be removed in a future version. "
                "Please use '/server_info' instead.")
        mrr = int(self.args.get("--max-running-requests") or (48 if self.speculative else 1024))
        state = {  # sglang/srt/managers/scheduler_components/internal_state.py: get_internal_state
            "effective_max_running_requests_per_dp": mrr,
            "last_gen_throughput": 0.0,
            "startup_time": {"load_weight": 41.5, "kv_cache_allocation": 2.25, "scheduler_e2e": 60.0,
                             "cuda_graph": {"prefill": 0.0, "decode": 12.0}},
            # sglang/srt/managers/scheduler_components/memory_usage.py: build_memory_usage
            "memory_usage": {"weight": 27.81, "kvcache": 51.2, "startup_available": 94.12, "token_capacity": 812345,
                             "token_capacity_swa": None,
                             "graph": {"prefill": 0.0, "decode": 1.5, "target_verify": 0.5 if self.speculative else 0.0,
                                       "draft_prefill": 0.0, "draft_decode": 0.0, "draft_extend": 0.0}},
        }
        if self.speculative and self.lifetime["forward"] > 0:  # _average_accept_length: every 40 steps, since flush
            state["avg_spec_accept_length"] = self.lifetime["accept"] / self.lifetime["forward"]
        resolved = {k.lstrip("-").replace("-", "_"): v for k, v in self.args.items()}
        resolved.setdefault("max_running_requests", None)
        resolved.setdefault("attention_backend", "flashinfer")
        resolved.setdefault("speculative_algorithm", None)
        info = {  # sglang/srt/utils/common.py: build_server_info, then http_server.py: server_info
            **resolved,
            "launch_command": " ".join(["sglang", "serve", *sys.argv[1:]]),  # holds the port: differs per cell
            "max_total_num_tokens": 812345, "max_req_input_len": 262139,
            "startup_time": {**state["startup_time"], "tokenizer_e2e": 75.0},
            "internal_states": [state],
            "version": VERSION,
            "frontend": "python",
        }
        return web.json_response(info)

    async def flush_cache(self, request: web.Request) -> web.Response:
        # http_server.py: flush_cache(timeout: float = Query(0.0, ge=0.0)); flush_wrapper.py: SchedulerFlushWrapper
        try:
            timeout = float(request.query.get("timeout", "0"))
            assert timeout >= 0
        except (ValueError, AssertionError):
            # FastAPI's 422 is turned into 400 (http_server.py: validation_exception_handler, RequestValidationError)
            return web.json_response({"object": "error", "message": "timeout must be >= 0", "type": "BadRequest",
                                      "code": 400}, status=400)
        deadline = time.monotonic() + timeout * SCALE
        if timeout > 0:
            while not self.idle() and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
        if self.idle():
            self.lifetime = {"accept": 0, "forward": 0}  # metrics_reporter.reset_metrics()
            log("Cache flushed successfully!", tp=True)
            return web.Response(text="Cache flushed.\nPlease check backend logs for more details. (When there are "
                                     "running or waiting requests, the operation will not be performed.)\n")
        if timeout > 0:
            log("Deferred flush_cache timed out while waiting for idle state.", tp=True)
            return web.Response(status=400, text="Timed out waiting for idle state.")
        # sglang/srt/managers/scheduler.py: flush_cache refuses while anything runs or waits
        log(f"Cache not flushed because there are pending requests. #queue-req: 0, #running-req: "
            f"{self.running + self.phantom}", tp=True)
        return web.Response(status=400, text="Flush cache failed.\n")

    def idle(self) -> bool:
        return self.running == 0 and not self.phantom

    async def metrics(self, request: web.Request) -> web.Response:
        # sglang/srt/utils/common.py: add_prometheus_middleware, only with --enable-metrics (http_server.py);
        # sglang/srt/observability/metrics_collector.py: names and labels
        if "--enable-metrics" not in self.args:
            return web.Response(status=404, text="Not Found")
        labels = 'model_name="%s",engine_type="unified",tp_rank="0",pp_rank="0"' % self.args.get("--served-model-name")
        text = ("# HELP sglang:generation_tokens_total Number of generation tokens processed.\n"
                "# TYPE sglang:generation_tokens_total counter\n"
                f'sglang:generation_tokens_total{{{labels},is_streaming="true"}} {self.totals["generation_tokens"]}\n'
                f'sglang:generation_tokens_total{{{labels},is_streaming="false"}} 0.0\n'
                "# HELP sglang:spec_verify_calls_total Number of speculative decoding verification calls.\n"
                "# TYPE sglang:spec_verify_calls_total counter\n"
                f'sglang:spec_verify_calls_total{{{labels}}} {self.totals["spec_verify_calls"]}\n')
        return web.Response(text=text, content_type="text/plain")

    async def models(self, request: web.Request) -> web.Response:
        name = self.args.get("--served-model-name")
        # sglang/srt/entrypoints/http_server.py: the model card carries max_model_len (the context length)
        return web.json_response({"object": "list", "data": [{"id": name, "object": "model", "owned_by": "sglang",
                                                              "max_model_len": 512}]})

    # ---- generation: sglang/srt/entrypoints/openai/serving_completions.py and serving_chat.py ----
    async def generate(self, request: web.Request) -> web.StreamResponse:
        self.on_first_request()
        body = await request.json()
        chat = request.path.endswith("/chat/completions")
        prompt = json.dumps(body.get("messages")) if chat else str(body.get("prompt", ""))
        n_tokens = int(body.get("max_tokens") or 16)
        options = body.get("stream_options") or {}
        # speculative: tokens per verify step depend on the prompt, so warm-up, probes and measured requests differ
        per_step = 1 + (len(prompt) % 3) if self.speculative else 1
        self.running += 1
        try:
            pieces, verifies = [1], 0  # the first token comes from prefill
            while sum(pieces) < n_tokens:
                pieces.append(min(per_step, n_tokens - sum(pieces)))
                verifies += 1 if self.speculative else 0
            if not body.get("stream"):  # the probes' chat answers: a plain sentence that stops (finish "stop")
                words = "Here is a short and plain answer from the stand-in server.".split()[:n_tokens]
                for _ in words:
                    await self.step(1)
                self.finish(len(words), 0)
                text = " ".join(words)
                message = {"message": {"role": "assistant", "content": text}} if chat else {"text": text}
                return web.json_response({"id": "x", "object": "chat.completion" if chat else "text_completion",
                                          "model": body.get("model"), "choices": [{"index": 0, **message,
                                          "finish_reason": "stop" if len(words) < n_tokens else "length"}],
                                          "usage": {"prompt_tokens": 8, "completion_tokens": len(words),
                                                    "total_tokens": 8 + len(words)}})
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            done = 0
            kind = "chat.completion.chunk" if chat else "text_completion"

            def chunk_of(choice: dict) -> bytes:
                return f"data: {json.dumps({'id': 'x', 'object': kind, 'model': body.get('model'), 'choices': [choice]})}\n\n".encode()

            if chat:  # serving_chat.py: _generate_chat_stream, "First chunk with role": no content, no usage
                await response.write(chunk_of({"index": 0, "delta": {"role": "assistant", "content": ""},
                                               "logprobs": None, "finish_reason": None}))
            for index, piece in enumerate(pieces):
                await self.step(piece)
                done += piece
                last = index == len(pieces) - 1
                delta = {"delta": {"content": " tok" * piece}} if chat else {"text": " tok" * piece}
                chunk = {"id": "x", "object": kind, "model": body.get("model"), "choices": [{
                    "index": 0, **delta, "logprobs": None, "finish_reason": "length" if last and not chat else None}]}
                if options.get("continuous_usage_stats"):  # cumulative usage in every content chunk
                    chunk["usage"] = {"prompt_tokens": 8, "completion_tokens": done, "total_tokens": 8 + done}
                await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
            if chat:  # serving_chat.py: "Send finish_reason chunks for each index that completed": empty delta
                await response.write(chunk_of({"index": 0, "delta": {}, "logprobs": None, "finish_reason": "length"}))
            self.finish(n_tokens, verifies)
            if body.get("return_spec_tokens_details") and verifies:
                # sglang/srt/entrypoints/openai/serving_chat.py (and serving_completions.py): after the finish chunk,
                # a response-level chunk, choices [], sglext.spec_tokens_details built from meta_info by
                # entrypoints/openai/utils.py: spec_tokens_details_from_meta_info; the figures are
                # managers/tokenizer_manager.py's (accept_length = completion_tokens / spec_verify_ct, proposed =
                # verify_ct * (num_draft_tokens - 1), correct drafts exclude the bonus token)
                drafts = int(self.args.get("--speculative-num-draft-tokens") or 4)
                correct = n_tokens - 1 - verifies
                details = {"spec_accept_rate": correct / (verifies * (drafts - 1)),
                           "spec_accept_length": n_tokens / verifies, "spec_cap_length": 0.0,
                           "spec_block_accept_length": 0.0, "spec_num_correct_drafts": correct,
                           "spec_num_proposed_drafts": verifies * (drafts - 1), "spec_verify_ct": verifies,
                           "spec_correct_drafts_histogram": [], "spec_cap_lens_histogram": []}
                ext = {"routed_experts": None, "cached_tokens_details": None, "spec_tokens_details": details,
                       "input_ids": None, "output_ids": None}
                chunk = {"id": "x", "object": "chat.completion.chunk" if chat else "text_completion",
                         "created": int(time.time()), "model": body.get("model"), "choices": [], "usage": None,
                         "sglext": ext}
                await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
            if options.get("include_usage"):  # the final usage chunk, choices []
                usage = {"prompt_tokens": 8, "completion_tokens": n_tokens, "total_tokens": 8 + n_tokens}
                await response.write(f"data: {json.dumps({'id': 'x', 'choices': [], 'usage': usage})}\n\n".encode())
            await response.write(b"data: [DONE]\n\n")
            return response
        finally:
            self.running -= 1

    # ---- native /generate with log-probabilities: sglang/srt/entrypoints/http_server.py generate_request ----
    async def native_generate(self, request: web.Request) -> web.Response:
        """A tiny deterministic model (LogitModel) behind SGLang's /generate fields, for the numerics check:
        input_ids or text; sampling_params max_new_tokens (0: prefill only, scheduler.py: logprob_start_len of a
        prefill-only request), temperature, sampling_seed; return_logprob, logprob_start_len (-1: output only,
        managers/scheduler.py), top_logprobs_num; meta_info input_/output_token_logprobs as [logprob, token_id,
        text] triples, text None without return_text_in_logprobs (managers/tokenizer_manager.py
        detokenize_logprob_tokens), the first input position None (scheduler_components/
        logprob_result_processor.py), top-k as lists of triples. With speculative decoding the output logprobs are
        the target model's of the accepted tokens over the temperature (layers/logprob_processor.py
        compute_spec_logprobs): the same numbers here. STANDIN_LOGIT_NOISE perturbs the model (a drifted cell)."""
        body = await request.json()
        model = LogitModel(float(os.environ.get("STANDIN_LOGIT_NOISE", "0")))
        ids = [int(t) for t in body.get("input_ids") or []] or [ord(c) % model.vocab for c in body.get("text", "")]
        params = body.get("sampling_params") or {}
        new, temperature = int(params.get("max_new_tokens", 16)), float(params.get("temperature", 1.0))
        rng = random.Random(params.get("sampling_seed"))
        k = int(body.get("top_logprobs_num") or 0)
        text_in = bool(body.get("return_text_in_logprobs"))
        out_ids: list[int] = []
        out_lp, out_top = [], []
        for _ in range(new):
            logprobs = model.logprobs([*ids, *out_ids])
            probs = [math.exp(lp / temperature) for lp in logprobs] if temperature > 0 else None
            token = (rng.choices(range(model.vocab), weights=probs)[0] if probs else
                     max(range(model.vocab), key=logprobs.__getitem__))
            await self.step(1)
            out_lp.append(model.triple(logprobs, token, text_in))
            out_top.append(model.top(logprobs, k, text_in))
            out_ids.append(token)
        meta: dict = {"id": "x", "finish_reason": {"type": "length", "length": new}, "prompt_tokens": len(ids),
                      "completion_tokens": new, "cached_tokens": 0}
        if body.get("return_logprob"):
            start = int(body.get("logprob_start_len", -1))
            start = len(ids) if start == -1 else start
            ins = [model.logprobs(ids[:i]) if i else None for i in range(start, len(ids))]
            meta["input_token_logprobs"] = [[None, t, None] if lp is None else model.triple(lp, t, text_in)
                                            for lp, t in zip(ins, ids[start:])]
            meta["input_top_logprobs"] = [None if lp is None else model.top(lp, k, text_in) for lp in ins]
            meta["output_token_logprobs"], meta["output_top_logprobs"] = out_lp, out_top
        self.finish(new, 0)
        return web.json_response({"text": "".join(chr(97 + t % 26) for t in out_ids), "output_ids": out_ids,
                                  "meta_info": meta})

    async def step(self, tokens: int) -> None:
        """One decode step; every DECODE_LOG_INTERVAL steps a "Decode batch" line
        (sglang/srt/managers/scheduler_components/metrics_reporter.py: report_decode_stats)."""
        await asyncio.sleep(STEP_S)
        interval = self.interval
        interval["tokens"] += tokens
        interval["steps"] += 1
        if self.speculative:
            interval["accept"] += tokens
            interval["forward"] += 1
        if interval["steps"] % DECODE_LOG_INTERVAL:
            return
        gap = time.perf_counter() - interval["tic"]
        throughput = interval["tokens"] / gap * float(os.environ.get("STANDIN_SERVER_TPUT_FACTOR", "1"))
        spec = ""
        if self.speculative and interval["forward"]:
            spec = f"accept len: {interval['accept'] / interval['forward']:.2f}, accept rate: 0.80, "
            self.lifetime["accept"] += interval["accept"]
            self.lifetime["forward"] += interval["forward"]
        log(f"Decode batch, #running-req: {self.running}, #token: {self.running * 64}, token usage: 0.01, {spec}"
            f"cuda graph: True, gen throughput (token/s): {throughput:.2f}, #queue-req: 0", tp=True)
        self.interval = {"accept": 0, "forward": 0, "tokens": 0, "steps": 0, "tic": time.perf_counter()}

    def finish(self, tokens: int, verifies: int) -> None:
        # metrics_collector.py: observe_one_finished_request (counters move when a request finishes)
        self.totals["generation_tokens"] += tokens
        self.totals["spec_verify_calls"] += verifies
        if os.environ.get("STANDIN_FOREIGN_TRAFFIC") and verifies:
            # a fault: another client's speculative request finished too (the counters are server-wide,
            # metrics_collector.py), one token per verify step
            self.totals["generation_tokens"] += 64
            self.totals["spec_verify_calls"] += 64
        if os.environ.get("STANDIN_TRUTH"):
            with open(os.environ["STANDIN_TRUTH"], "a") as f:
                f.write(json.dumps({"tokens": tokens, "verifies": verifies, "t": time.time()}) + "\n")


class LogitModel:
    """Next-token log-probabilities over a small vocabulary from the last two tokens (deterministic); `noise`
    shifts every logit by a fixed pseudo-random amount: the same model served with a numerics fault."""

    vocab = 50

    def __init__(self, noise: float = 0.0):
        self.noise = noise

    def logprobs(self, context: list[int]) -> list[float]:
        a, b = (context[-2] if len(context) > 1 else 0), (context[-1] if context else 0)
        logits = [math.sin(1.3 * t + 0.7 * a + 0.4 * b) * 3.0 + self.noise * math.cos(2.9 * t * (b + 1))
                  for t in range(self.vocab)]
        top = max(logits)
        norm = top + math.log(sum(math.exp(x - top) for x in logits))
        return [x - norm for x in logits]

    def triple(self, logprobs: list[float], token: int, text: bool) -> list:
        return [logprobs[token], token, chr(97 + token % 26) if text else None]

    def top(self, logprobs: list[float], k: int, text: bool) -> list[list]:
        order = sorted(range(self.vocab), key=lambda t: -logprobs[t])[:k]
        return [self.triple(logprobs, t, text) for t in order]


def parse_flags(argv: list[str]) -> dict[str, str | bool]:
    flags: dict[str, str | bool] = {}
    i = 0
    while i < len(argv):
        if argv[i].startswith("--"):
            if i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                flags[argv[i]] = argv[i + 1]
                i += 2
                continue
            flags[argv[i]] = True
        i += 1
    return flags


def die_like_a_scheduler_crash() -> None:
    """A scheduler's crash ends with the launcher SIGKILLed, exit code -9: its SIGQUIT handler calls
    kill_process_tree(os.getpid()) with the launcher included (sglang/srt/entrypoints/engine.py: launch_phase_sigquit_handler;
    sglang/srt/utils/common.py: kill_process_tree). Seen on the real server: every scheduler crash exits -9."""
    os.kill(os.getpid(), signal.SIGKILL)


def crash_at_startup(kind: str, server: Server) -> None:
    if kind == "flashinfer":  # FlashInfer 0.7.2 on SM120 (csrc/trtllm_batched_gemm_runner.cu), raised in a scheduler
        log("Scheduler hit an exception: Traceback (most recent call last):", tp=True)  # scheduler.py
        print('  File "/x/flashinfer/fused_moe/core.py", line 1408, in trtllm_fp4_block_scale_moe\n'
              "RuntimeError: The trtllm-gen batched GEMM cubin manifest contains no kernels runnable on sm120; this "
              "backend currently ships cubins for sm100, sm103 and sm107.", flush=True)
        log("Received sigquit from a child process. It usually means the child failed.")  # engine.py
        die_like_a_scheduler_crash()
    if kind == "oom_kill":  # sglang/srt/entrypoints/engine.py: _wait_for_scheduler_ready, _scheduler_died_error
        assert server.scheduler is not None
        server.scheduler.wait()  # the pipe said EOF: the scheduler is gone
        print("Traceback (most recent call last):\n"
              f"RuntimeError: Rank 0 scheduler died during initialization (exit code: {server.scheduler.returncode}). "
              "If exit code is -9 (SIGKILL), a common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to "
              "check.", flush=True)
        die_like_a_scheduler_crash()
    if kind == "port":  # sglang/srt/utils/network.py: wait_port_available
        port = int(server.args["--port"]) + 1
        log(f"The port {port} is in use, but we could not find the process that uses it.")
        print(f"ValueError: nccl_port at {port} is not available in 30 seconds. nccl_port at {port} is not available",
              flush=True)
        sys.exit(1)


async def main() -> None:
    server = Server(sys.argv[1:])
    log(f"server_args=ServerArgs(model_path={server.args.get('--model-path')!r}, ...)")
    if server.speculative and "--max-running-requests" not in server.args:
        # sglang/srt/arg_groups/speculative_hook.py
        log("Max running requests is reset to 48 for speculative decoding. You can override this by explicitly "
            "setting --max-running-requests.")
    read_end, write_end = os.pipe()
    server.scheduler = subprocess.Popen([sys.executable, __file__, "--scheduler", str(write_end)],
                                        pass_fds=(write_end,))
    os.close(write_end)
    server.detokenizer = subprocess.Popen([sys.executable, __file__, "--detokenizer"])
    loaded = await asyncio.get_running_loop().run_in_executor(None, os.read, read_end, 16)
    if os.environ.get("STANDIN_CRASH") or loaded != b"ready":
        crash_at_startup(os.environ.get("STANDIN_CRASH") or "oom_kill", server)
    app = web.Application()
    app.router.add_get("/health", server.health_generate)
    app.router.add_get("/health_generate", server.health_generate)
    app.router.add_get("/server_info", server.server_info)
    app.router.add_get("/get_server_info", server.server_info)
    app.router.add_route("*", "/flush_cache", server.flush_cache)
    app.router.add_get("/metrics", server.metrics)
    app.router.add_get("/v1/models", server.models)
    app.router.add_post("/v1/completions", server.generate)
    app.router.add_post("/generate", server.native_generate)
    app.router.add_post("/v1/chat/completions", server.generate)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    # http_server.py launch_server: Engine._launch_subprocesses blocks until the schedulers have loaded the weights,
    # and only then does uvicorn bind the port: a port taken meanwhile fails the bind ([Errno 98])
    await asyncio.sleep(0.3 * float(os.environ.get("STANDIN_LOAD_FACTOR", "1")))
    try:
        await web.TCPSite(runner, server.args.get("--host", "127.0.0.1"), int(server.args["--port"])).start()
    except OSError as exc:
        log(f"ERROR:    [Errno {exc.errno}] error while attempting to bind on address: {exc.strerror}")  # uvicorn
        server.scheduler.kill()
        server.detokenizer.kill()
        raise SystemExit(1)
    stop = asyncio.Event()

    def sigterm() -> None:  # tokenizer_manager.py: SignalHandler.sigterm_handler
        log(f"SIGTERM received. signum={signal.SIGTERM!r} frame=None. Draining requests and shutting down...")
        server.gracefully_exit = True
        stop.set()

    loop = asyncio.get_running_loop()
    # tokenizer_manager.py: auto_create_handle_loop installs the SIGTERM handler at the first request; before it
    # (while loading) a SIGTERM kills the launcher outright, and its children die with it (PDEATHSIG)
    def install_sigterm_handler() -> None:
        loop.add_signal_handler(signal.SIGTERM, sigterm)
        server.on_first_request = lambda: None

    server.on_first_request = install_sigterm_handler
    await asyncio.sleep(0.05)  # http_server.py _wait_and_warmup: /health answers 503 until the warm-up is done
    server.on_first_request()  # http_server.py: _wait_and_warmup sends a /generate warm-up before "fired up"
    server.ready = True
    log("The server is fired up and ready to roll!")  # http_server.py
    await stop.wait()
    # tokenizer_manager.py: sigterm_watchdog: notices within 5 s, drains, ShutdownReq, 15 s for the schedulers
    await asyncio.sleep(5 * SCALE)
    while server.running:
        log(f"Gracefully exiting... Remaining number of requests {server.running}.")
        await asyncio.sleep(5 * SCALE)
    server.scheduler.send_signal(signal.SIGUSR1)
    deadline = time.monotonic() + 15 * SCALE
    while time.monotonic() < deadline and server.scheduler.poll() is None:
        await asyncio.sleep(0.05)
    if server.scheduler.poll() is None:
        log(f"Schedulers still alive 15s after ShutdownReq, killing them before they released: [{server.scheduler.pid}]")
        server.scheduler.kill()  # kill_process_tree(os.getpid(), include_parent=False)
        server.scheduler.wait()
    server.detokenizer.kill()
    server.detokenizer.wait()
    await runner.cleanup()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--scheduler"]:
        scheduler_main(int(sys.argv[2]))
    elif sys.argv[1:2] == ["--detokenizer"]:
        detokenizer_main()
    else:
        asyncio.run(main())
