"""`evalharness diagnose`: the harness's log knowledge (crash classes, warnings with values, the engine's own decode
lines) applied to a server log produced outside the harness. Pure: text in, a Diagnosis record out."""

from __future__ import annotations

from evalharness.records.diagnosis import DiagnosedWarning, Diagnosis
from evalharness.serving.engines import ENGINES
from evalharness.serving.logscan import COMMON_CRASHES, classify_crash, extract_warnings, line_tiers


def guess_engine(text: str) -> str | None:
    """The engine whose own lines the log holds most of (the first registered on a tie); None when it holds none."""
    counts = {name: engine.log_markers(text) for name, engine in ENGINES.items()}
    best = max(counts, key=lambda name: counts[name])
    return best if counts[best] else None


def diagnose(text: str, log_name: str, engine_name: str | None = None) -> Diagnosis:
    """The diagnosis of one log; `engine_name` None guesses it (ValueError when it cannot be told)."""
    guessed = engine_name is None
    name = engine_name or guess_engine(text)
    if name is None:
        known = " or ".join(e.label for e in ENGINES.values() if e.launches)
        raise ValueError(f"cannot tell which engine wrote this log (no {known} lines): pass --engine")
    engine = ENGINES[name]
    rules = engine.log_rules
    lines = text.splitlines()
    crashed = "fatal" in line_tiers(lines, rules)
    crash = classify_crash(text, rules) if crashed else None
    source = next((r.source for r in (*rules.crashes, *COMMON_CRASHES)
                   if crash and r.kind == crash.kind and r.pattern.search(crash.line)), "")
    by_key = {r.key: r for r in rules.warnings}
    warnings = [DiagnosedWarning(key=w.key, message=w.message, values=w.values, count=w.count,
                                 meaning=by_key[w.key].meaning if w.key in by_key else "",
                                 source=by_key[w.key].source if w.key in by_key else "")
                for w in extract_warnings(text, rules)]
    return Diagnosis(log=log_name, engine=name, engine_guessed=guessed, lines=len(lines), crashed=crashed,
                     crash=crash, crash_source=source, warnings=warnings, decode=engine.scenario_log_summary(text))
