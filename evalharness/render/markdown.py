"""Markdown building blocks for every rendered text: escaping of untrusted text, fenced blocks, pipe tables (tabulate).

Model output and engine logs are untrusted text: in a table cell, pipes, backticks, HTML and @-mentions are neutralised
so nothing can break the table, inject markup or ping anyone on a pull request; longer text goes in fenced blocks whose
fence is longer than any backtick run inside. The escaping is ours and runs before tabulate sees a cell.
"""

from __future__ import annotations

import re
from typing import Any

from tabulate import tabulate

_MD_SPECIAL = re.compile(r"([\\*_\[\]#~!])")


def md_text(value: Any, limit: int = 200) -> str:
    """Untrusted text made safe for one Markdown table cell (and for inline prose)."""
    text = " ".join(str(value).split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MD_SPECIAL.sub(r"\\\1", text)
    return text.replace("|", "\\|").replace("`", "&#96;").replace("@", "&#64;")


def code_block(text: str, info: str = "text") -> str:
    """Untrusted text in a fenced block that nothing inside can close early."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    inert = text.replace("@", "@\u200b")  # a zero-width space after @ keeps a mention from pinging anyone
    return f"{fence}{info}\n{inert}\n{fence}"


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A pipe table of cells already made safe (md_text, or our own formatting). Rows stay unpadded, so a row reads
    the same whatever else is in its column; tabulate must not parse numbers (it would reformat '1.10' as 1.1)."""
    return tabulate(rows, headers=header, tablefmt="pipe", stralign=None, numalign=None, disable_numparse=True)


def bold_verdict(text: str) -> str:
    """A verdict that calls the cell out, its first word bold: '**flagged** (p 0.02)'; any other verdict escaped."""
    word, _, rest = text.partition(" ")
    return (f"**{md_text(word)}**" + (f" {md_text(rest)}" if rest else "") if word.rstrip(":") in ("flagged", "worse")
            else md_text(text))
