"""What a cell's launch flags mean for the calls tasks, said before anything is launched (`validate`), pure: an
engine launched without a tool parser answers tool cases otherwise than one with it, and that is often the very fault
a matrix is after, so these are notes, not errors. Reads the flags as each engine's pinned source does:
vLLM 0.32.0 refuses tool_choice "auto" without both --enable-auto-tool-choice and --tool-call-parser
(entrypoints/openai/chat_completion/serving.py); SGLang 0.5.23 returns calls as text without --tool-call-parser
(srt/entrypoints/openai/serving_chat.py) and answers HTTP 400 "Grammar-based generation (json_schema, regex, ebnf,
structural_tag) is not supported when the server is launched with --grammar-backend none" (measured, 2026-12-04)."""

from __future__ import annotations

from typing import Any


def calls_flag_notes(engine: str, args: dict[str, Any], kinds: set[str]) -> list[str]:
    """Notes for one cell on `engine` with launch `args`, given the kinds of calls tasks the matrix runs."""
    def given(flag: str) -> bool:
        return args.get(flag) not in (None, False)

    notes = []
    if "tools" in kinds and engine == "vllm" and not (given("--enable-auto-tool-choice") and given("--tool-call-parser")):
        notes.append("tool cases asked with tool_choice auto are refused (vLLM needs --enable-auto-tool-choice and "
                     "--tool-call-parser); they are counted as refused")
    if "tools" in kinds and engine == "sglang" and not given("--tool-call-parser"):
        notes.append("no --tool-call-parser: SGLang returns calls as text, scored as no call")
    if kinds and engine == "sglang" and str(args.get("--grammar-backend")) == "none":
        notes.append("--grammar-backend none: SGLang 0.5.23 refuses every request with tools (it constrains calls "
                     "with a structural tag, whatever the tool_choice) or a response_format json_schema; counted as "
                     "refused")
    return notes
