"""Markdown for `evalharness diagnose`: one log's crash class with the lines that show it, its known warnings with
values and what each means for a matrix. Pure; log text goes through the escaping of markdown.py."""

from __future__ import annotations

from evalharness.records.diagnosis import Diagnosis
from evalharness.render.markdown import code_block, markdown_table, md_text


def diagnosis_markdown(d: Diagnosis) -> str:
    engine = f"{md_text(d.engine)}{' (guessed from its lines)' if d.engine_guessed else ''}"
    out = [f"# Diagnosis: {md_text(d.log)}", "", f"Engine {engine}; {d.lines} lines.", ""]
    if d.crash is None:
        out += ["No fatal error in this log (no exception, traceback or error line).", ""]
    else:
        out += [f"## Crash: **{md_text(d.crash.kind)}**", "", md_text(d.crash.line, 500), ""]
        if d.crash.hint:
            out += [f"What to do: {md_text(d.crash.hint, 500)}.", ""]
        if d.crash_source:
            out += [f"Known from: {md_text(d.crash_source, 300)}.", ""]
        out += [code_block(d.crash.excerpt), ""]
    known = [w for w in d.warnings if w.key != "other"]
    others = [w for w in d.warnings if w.key == "other"]
    if known:
        rows = [[md_text(w.key), md_text(", ".join(f"{k}={v}" for k, v in w.values.items())), str(w.count),
                 md_text(w.meaning, 300), md_text(w.message, 200)] for w in known]
        out += ["## Known warnings", "", markdown_table(["warning", "values", "times", "what it means for the matrix",
                                                         "line"], rows), ""]
    if others:
        out += [f"{len(others)} other warning lines, e.g.: {md_text(others[0].message, 200)}", ""]
    if d.decode:
        out += ["## The server's own decode lines", "",
                ", ".join(f"{md_text(k)} {md_text(v)}" for k, v in d.decode.items()), ""]
    return "\n".join(out).rstrip() + "\n"
