"""A stand-in llama.cpp server (`llama-server`), written from ggml-org/llama.cpp's tools/server (README.md at 25d5b0c,
server.cpp at 00dd081, server-task.cpp at 00efb3e, server-context.cpp at 001d906) and src/llama.cpp (01649e6): the
harness's llama.cpp engine (evalharness/serving/engines/llamacpp.py) is launched against it, because the real server
is a C++ build and a GGUF model the test machine cannot fetch. It tests OUR side of the contract: every behaviour
cites the source it copies, and its text is its own ("stand-in"), never a model's.

Launched as the harness launches llama-server: `python llamacpp_standin.py -m MODEL.gguf --host H --port P --alias
NAME [-c N] [-np N] [other flags, ignored]`. A MODEL that is not a file fails to load (exit 1). One process: SIGTERM
and SIGINT stop it.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time

from aiohttp import web

ANSWER = "Here is a short and plain answer from the stand-in server."
BUILD = "b7000-standin"


def log(message: str) -> None:
    print(message, flush=True)


def parse(argv: list[str]) -> dict[str, str | bool]:
    out: dict[str, str | bool] = {}
    for index, item in enumerate(argv):
        if item.startswith("-"):
            following = argv[index + 1] if index + 1 < len(argv) else ""
            out[item] = following if following and not following.startswith("-") else True
    return out


class Server:
    def __init__(self, args: dict[str, str | bool]):
        self.args = args
        self.ready = False
        self.n_ctx = int(args.get("-c") or args.get("--ctx-size") or 4096)
        self.slots = int(args.get("-np") or args.get("--parallel") or 1)
        self.alias = str(args.get("--alias") or args.get("-a") or args["-m"])

    async def health(self, request: web.Request) -> web.Response:
        # README "GET /health": 503 while the model loads, then 200 {"status": "ok"}
        if not self.ready:
            return web.json_response({"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}},
                                     status=503)
        return web.json_response({"status": "ok"})

    async def props(self, request: web.Request) -> web.Response:
        # README "GET /props": default_generation_settings (n_ctx, params), total_slots, model_path, chat_template,
        # modalities, build_info
        params = {"n_predict": -1, "seed": 4294967295, "temperature": 0.800000011920929, "top_k": 40,
                  "top_p": 0.949999988079071, "min_p": 0.05000000074505806, "max_tokens": -1, "n_probs": 0}
        return web.json_response({
            "default_generation_settings": {"id": 0, "id_task": -1, "n_ctx": self.n_ctx, "speculative": False,
                                            "is_processing": False, "params": params, "prompt": ""},
            "total_slots": self.slots, "model_path": self.args["-m"], "chat_template": "{{ messages }}",
            "modalities": {"vision": False}, "build_info": BUILD})

    async def models(self, request: web.Request) -> web.Response:
        # README "GET /v1/models": one element, its id the alias (the model path without one)
        return web.json_response({"object": "list", "data": [{"id": self.alias, "object": "model",
                                                              "created": int(time.time()), "owned_by": "llamacpp",
                                                              "meta": {"n_ctx_train": self.n_ctx}}]})

    async def generate(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        chat = request.path.endswith("/chat/completions")
        n_tokens = int(body.get("max_tokens") or 16)
        words = ANSWER.split()
        if not body.get("stream"):
            text = " ".join(words[:n_tokens])
            finish = "stop" if len(words) <= n_tokens else "length"
            choice = {"index": 0, "message": {"role": "assistant", "content": text}} if chat else {"index": 0,
                                                                                                    "text": text}
            used = min(len(words), n_tokens)
            return web.json_response({"id": "x", "object": "chat.completion" if chat else "text_completion",
                                      "created": int(time.time()), "model": self.alias,
                                      "choices": [{**choice, "finish_reason": finish}],
                                      "usage": {"prompt_tokens": 8, "completion_tokens": used,
                                                "total_tokens": 8 + used}})
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        kind = "chat.completion.chunk" if chat else "text_completion"
        usage = {"completion_tokens": n_tokens, "prompt_tokens": 8, "total_tokens": 8 + n_tokens}
        timings = {"prompt_n": 8, "predicted_n": n_tokens}

        async def send(chunk: dict) -> None:
            head = {"id": "x", "object": kind, "created": int(time.time()), "model": self.alias}
            await response.write(f"data: {json.dumps({**head, **chunk})}\n\n".encode())

        for _ in range(n_tokens):
            await asyncio.sleep(0.002)
            delta = {"delta": {"content": " tok"}} if chat else {"text": " tok"}
            await send({"choices": [{"index": 0, **delta, "finish_reason": None}]})
        if chat:  # server-task.cpp to_json_oaicompat_chat_stream: the finish chunk, an empty delta and the timings;
            # usage in a chunk of its own, choices [], only when stream_options.include_usage
            await send({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}], "timings": timings})
            if (body.get("stream_options") or {}).get("include_usage"):
                await send({"choices": [], "usage": usage})
        else:  # to_json_oaicompat: the last object, text "" (server-context.cpp: content already sent), always
            # with usage and timings
            await send({"choices": [{"index": 0, "text": "", "finish_reason": "length"}], "usage": usage,
                        "timings": timings})
        await response.write(b"data: [DONE]\n\n")
        return response


async def main() -> int:
    args = parse(sys.argv[1:])
    model = str(args.get("-m") or "")
    log("build: 7000 (standin) with cc for x86_64-linux-gnu")
    if not os.path.isfile(model):  # src/llama.cpp llama_model_load and its caller; server.cpp load_model, then exit 1
        log(f"llama_model_load: error loading model: failed to open {model}: No such file or directory")
        log("llama_model_load_from_file_impl: failed to load model")
        log(f"srv    load_model: failed to load model, '{model}'")
        log("srv  llama_server: exiting due to model loading error")
        return 1
    server = Server(args)
    app = web.Application()
    app.router.add_get("/health", server.health)
    app.router.add_get("/props", server.props)
    app.router.add_get("/v1/models", server.models)
    app.router.add_post("/v1/completions", server.generate)
    app.router.add_post("/v1/chat/completions", server.generate)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, str(args.get("--host", "127.0.0.1")), int(args["--port"])).start()
    log(f"llama_model_loader: loaded meta data from {model}")
    await asyncio.sleep(0.2)  # loading: every route answers 503 "Loading model" meanwhile (server-http.cpp)
    server.ready = True
    log("srv  llama_server: model loaded")  # server.cpp llama_server: SRV_INF, "srv  %12.*s: "
    log(f"srv  llama_server: server is listening on http://{args.get('--host')}:{args['--port']}")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for number in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(number, stop.set)
    await stop.wait()  # server.cpp: SIGINT and SIGTERM stop its loop, clean_up() runs, exit 0
    await runner.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
