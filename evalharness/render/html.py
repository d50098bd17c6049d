"""report.html: one self-contained page per run, opened from disk with no server and no network.

The page is a fixed shell (html_page.css, html_page.js and the vendored Chart.js, all inlined) around the run's data
(html_data.py) embedded as JSON in a <script type="application/json"> block, gzip-compressed and base64-encoded when
large (the browser's DecompressionStream unpacks it; a browser refuses fetch() on file:// pages, so nothing is read
beside the page). Model output is untrusted: the JSON has every '<', '>', '&' and U+2028/2029 escaped, so no text can
close the block or start markup, and the page inserts data only as text (textContent, never innerHTML).

Pure: a RunResult and its folder in, text out. Must not import phases, serving, the runner or the command line.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import html
import json
from functools import lru_cache
from importlib import resources
from pathlib import Path

from evalharness.records.io import atomic_write_text
from evalharness.records.run import RunResult
from evalharness.render.html_data import page_data

COMPRESS_ABOVE = 256 * 1024  # bytes of JSON: below it the data stays readable in the page's source
_SCRIPT_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def json_for_script(data: object) -> str:
    """JSON that can sit inside a <script> element whatever its strings hold: '</script>', '<!--' and the line
    separators that end a JavaScript string are written as \\u escapes, which JSON.parse reads back unchanged."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return "".join(_SCRIPT_ESCAPES.get(ch, ch) for ch in text) if any(c in text for c in _SCRIPT_ESCAPES) else text


def embedded_payload(data: object, compress: bool | None = None) -> str:
    """The data block's JSON: {"encoding": "json", "data": ...} or, when the JSON exceeds COMPRESS_ABOVE (or
    `compress` says so), {"encoding": "gzip+base64", "data": "..."}."""
    raw = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    if compress is None:
        compress = len(raw.encode("utf-8")) > COMPRESS_ABOVE
    if compress:
        packed = base64.b64encode(gzip.compress(raw.encode("utf-8"), compresslevel=6, mtime=0)).decode("ascii")
        return json_for_script({"encoding": "gzip+base64", "data": packed})
    return json_for_script({"encoding": "json", "data": data})


@lru_cache(maxsize=None)
def _asset(name: str) -> str:
    text = resources.files("evalharness.render").joinpath(name).read_text(encoding="utf-8")
    if "</script" in text.lower():  # an inlined script must not close its own element (a vendored update could)
        raise ValueError(f"evalharness/render/{name} contains '</script': it cannot be inlined")
    return text


def render_html(run: RunResult, run_dir: Path, compress: bool | None = None) -> str:
    """The page of a saved run; `compress` forces the data block's encoding (None: by size)."""
    data = page_data(run, Path(run_dir))
    scripts = [_asset("vendor/chart.umd.min.js"), _asset("html_page.js")]
    # only these two scripts may run, by their hashes: a second line of defence should any text ever become markup
    allowed = " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()}'" for s in scripts)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src {allowed}; \
style-src 'unsafe-inline'; img-src data:">
<title>{html.escape(data["title"])}</title>
<style>{_asset("html_page.css")}</style>
</head>
<body>
<noscript>This page draws the run's data with JavaScript; report.md beside it holds the same results as text.</noscript>
<main id="page"><p id="loading">Loading the run…</p></main>
<script type="application/json" id="eh-data">{embedded_payload(data, compress)}</script>
<script>{scripts[0]}</script>
<script>{scripts[1]}</script>
</body>
</html>
"""


def write_html(run: RunResult, run_dir: Path, path: Path | None = None) -> Path:
    path = Path(path) if path else Path(run_dir) / "report.html"
    atomic_write_text(path, render_html(run, run_dir))
    return path
