"""The record `evalharness diagnose` produces for one server log produced outside the harness (a hand-run server, a CI
job): the engine, the crash class with the lines that show it, the known warnings with their values and what each
means for a matrix. Saved as JSON (`--json`) or rendered as Markdown (render/diagnosis.py)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from evalharness.records.measures import CrashReason


class DiagnosedWarning(BaseModel):
    key: str
    message: str
    values: dict[str, str] = {}
    count: int = 1
    meaning: str = ""
    source: str = ""


class Diagnosis(BaseModel):
    log: str
    engine: str
    engine_guessed: bool
    lines: int
    crashed: bool  # a fatal line (exception, traceback, ERROR, argparse error) is in the log
    crash: CrashReason | None = None
    crash_source: str = ""
    warnings: list[DiagnosedWarning] = []
    decode: dict[str, Any] = {}  # the engine's own throughput lines summarised (SGLang's "Decode batch")
