"""Preflight for SGLang: every cell's argv through the installed SGLang's own parser, its SGLANG_* variables against
the ones that SGLang defines, before a single GPU is touched.

SGLang lives in its own environment (with torch), not the harness's, so the check runs a small script in a Python
that has sglang importable (the matrix's launcher, `--engine-python`, or $EVALHARNESS_SGLANG_PYTHON). It calls
`sglang.srt.server_args.prepare_server_args(argv)`: an unknown flag or an invalid choice ends in argparse's
SystemExit(2), whose message names the flag; the script keeps argparse's "error:" line for the report. Environment
variables are read from `sglang.srt.environ.Envs` (a stdlib-only module listing every variable SGLang reads).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from pydantic import BaseModel

from evalharness.serving.engines._common import render_args
from evalharness.matrix.schema import Cell, Matrix

CHECK_SCRIPT = r"""
import contextlib, io, json, sys
request = json.load(sys.stdin)
out = {"version": None, "cells": {}, "env_known": None, "error": None}
try:
    import sglang
    out["version"] = getattr(sglang, "__version__", None)
    from sglang.srt.server_args import prepare_server_args
except Exception as exc:
    out["error"] = f"cannot import sglang's parser: {type(exc).__name__}: {exc}"
    print(json.dumps(out)); sys.exit(0)
try:
    from sglang.srt import environ
    fields = getattr(environ, "EnvField", None)
    envs = getattr(environ, "Envs", None)
    if envs is not None and fields is not None:
        out["env_known"] = sorted(n for c in envs.__mro__ for n, v in vars(c).items() if isinstance(v, fields))
except Exception:
    pass
for cell in request["cells"]:
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            prepare_server_args(cell["argv"])
        out["cells"][cell["id"]] = {"ok": True}
    except SystemExit as exc:
        lines = [l for l in err.getvalue().splitlines() if "error:" in l]
        out["cells"][cell["id"]] = {"ok": False, "error": lines[-1].split("error:", 1)[1].strip() if lines
                                    else f"the parser exited with {exc.code}"}
    except Exception as exc:
        out["cells"][cell["id"]] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
print(json.dumps(out))
"""


class CellCheck(BaseModel):
    id: str
    ok: bool
    error: str | None = None
    unknown_env: list[str] = []


class SglangCheck(BaseModel):
    python: str
    version: str | None = None
    checked: bool
    reason: str | None = None  # why nothing could be checked
    cells: list[CellCheck] = []

    @property
    def failed(self) -> list[CellCheck]:
        return [c for c in self.cells if not c.ok or c.unknown_env]


def find_python(matrix: Matrix, explicit: str | None = None) -> str | None:
    """A Python that should have sglang: --engine-python, $EVALHARNESS_SGLANG_PYTHON, the matrix's launcher when it is
    a Python, else the interpreter behind the `sglang` command on PATH."""
    if explicit:
        return explicit
    if os.environ.get("EVALHARNESS_SGLANG_PYTHON"):
        return os.environ["EVALHARNESS_SGLANG_PYTHON"]
    launcher = (matrix.command or ["sglang"])[0]
    if Path(launcher).name.startswith("python"):
        return launcher
    found = shutil.which(launcher)
    if found:
        try:
            first = Path(found).read_text(encoding="utf-8", errors="replace").splitlines()[0]
        except (OSError, IndexError):
            return None
        if first.startswith("#!") and "python" in first:
            return first[2:].strip().split()[0]
    return None


def parser_argv(matrix: Matrix, cell: Cell) -> list[str]:
    """The flags the launcher passes to SGLang's parser (what follows `sglang serve`)."""
    return ["--model-path", matrix.model, "--served-model-name", matrix.served_model_name or matrix.model,
            *render_args(cell.args)]


def check_cells(matrix: Matrix, cells: list[Cell], python: str | None, timeout_s: float = 600) -> SglangCheck:
    if not python:
        return SglangCheck(python="", checked=False, reason="no Python with sglang found: pass --engine-python or "
                           "set EVALHARNESS_SGLANG_PYTHON; flags were checked for shape only")
    request = {"cells": [{"id": c.id, "argv": parser_argv(matrix, c)} for c in cells]}
    try:
        proc = subprocess.run([python, "-c", CHECK_SCRIPT], input=json.dumps(request), capture_output=True,
                              text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return SglangCheck(python=python, checked=False, reason=f"cannot run {python}: {exc}")
    try:
        data = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        return SglangCheck(python=python, checked=False, reason=f"the check failed in {python}: {tail[0]}")
    if data.get("error"):
        return SglangCheck(python=python, checked=False, reason=data["error"])
    known = set(data["env_known"]) if data.get("env_known") is not None else None
    results = []
    for cell in cells:
        verdict = data["cells"].get(cell.id, {"ok": False, "error": "not checked"})
        unknown = sorted(n for n in cell.env if known is not None and n.startswith(("SGLANG_", "SGL_")) and n not in known)
        results.append(CellCheck(id=cell.id, ok=verdict["ok"], error=verdict.get("error"), unknown_env=unknown))
    return SglangCheck(python=python, version=data.get("version"), checked=True, cells=results)
