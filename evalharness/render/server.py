"""The report's "Server" section: what an engine user reads first about each cell (SGLang: memory for weights, KV cache
and CUDA graphs, token capacity, the effective max running requests, the startup breakdown, the versions that decide
what works on SM120), and the engine's own throughput lines next to the client's, flagged when they disagree.
Pure: records in, Markdown lines out; every value from the engine goes through md_text."""

from __future__ import annotations

from evalharness.records.run import CellResult, RunResult
from evalharness.render.markdown import markdown_table, md_text

_MEMORY = ("weights", "kv_cache", "cuda_graph")
_STARTUP = ("load_weight", "kv_cache_allocation", "scheduler_e2e", "tokenizer_e2e")


def _num(value, fmt: str = "{}") -> str:
    return "" if value is None else fmt.format(value)


def _versions(cell: CellResult) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(cell.server.get("versions", {}).items()))


def server_section(run: RunResult) -> list[str]:
    cells = [run.cells[c] for c in run.cell_order if c in run.cells and run.cells[c].server]
    if not cells:
        return []
    rows = []
    for cell in cells:
        facts = cell.server
        memory = facts.get("memory_gb", {})
        startup = facts.get("startup_s", {})
        graph_startup = sum(v for k, v in startup.items() if k.startswith("cuda_graph."))
        rows.append([f"`{cell.id}`", *(_num(memory.get(k), "{:.2f}") for k in _MEMORY),
                     _num(facts.get("token_capacity"), "{:,}"), _num(facts.get("max_running_requests")),
                     *(_num(startup.get(k), "{:.1f}") for k in _STARTUP),
                     f"{graph_startup:.1f}" if graph_startup else ""])
    out = ["## Server: memory, batch ceiling, startup", "",
           "What each server said about itself once ready (SGLang: `/server_info`, `internal_states[0]`): "
           "GPU memory in "
           "GB for the weights, the KV cache and captured CUDA graphs, the KV cache's token capacity, the max running "
           "requests it really uses, and its startup in seconds. A different max running requests means the cells "
           "do not batch alike.", "",
           markdown_table(["cell", "weights GB", "KV cache GB", "CUDA graph GB", "token capacity", "max running req",
                           "load weights s", "KV alloc s", "scheduler s", "tokenizer s", "graph capture s"], rows), ""]
    versions = {_versions(c) for c in cells}
    if len(versions) == 1:
        out += [f"Versions: {md_text(versions.pop(), 500)}.", ""]
    else:
        out += ["Versions differ between cells:", ""]
        out += [f"- `{c.id}`: {md_text(_versions(c), 500)}" for c in cells]
        out.append("")
    out += _server_throughput(run)
    return out


def _server_throughput(run: RunResult) -> list[str]:
    rows = []
    flagged = []
    for cid in run.cell_order:
        cell = run.cells.get(cid)
        for sc in (cell.throughput if cell else []):
            engine = sc.engine
            if "server_decode_lines" not in engine:
                continue
            ratio = engine.get("server_client_ratio")
            flag = "**server and client disagree**" if engine.get("throughput_disagreement") else ""
            if flag:
                flagged.append(f"`{cid}` {md_text(sc.name)}")
            rows.append([f"`{cid}`", md_text(sc.name), str(engine["server_decode_lines"]),
                         md_text(engine.get("server_cuda_graph", "")), _num(engine.get("server_accept_len_mean"),
                                                                            "{:.2f}"),
                         _num(engine.get("server_gen_tok_s_median"), "{:.1f}"), f"{sc.output_tok_s:.1f}",
                         _num(ratio, "{:.2f}"), _num(engine.get("server_queue_max")), flag])
    if not rows:
        return []
    out = ["The server's own \"Decode batch\" lines during each measured scenario (every 40 decode steps), next to "
           "the client's output tokens/s (single-stream: over decode time only, as the server counts; several "
           "streams: as measured); more than 10% apart is flagged (the client's clock, the server's batch "
           "accounting, or requests the client did not send).", "",
           markdown_table(["cell", "scenario", "decode lines", "CUDA graph", "accept len (server)",
                           "gen tok/s (server, median)", "output tok/s (client)", "server/client", "max queue", ""],
                          rows), ""]
    if flagged:
        out += [f"Server and client throughput disagree in: {', '.join(flagged)}.", ""]
    return out
