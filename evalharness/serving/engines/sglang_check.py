"""Preflight for SGLang: every cell's argv through the installed SGLang's own parser, its SGLANG_* variables against
the ones that SGLang defines, before a single GPU is touched.

SGLang lives in its own environment (with torch), not the harness's, so the check runs a small script in a Python
that has sglang importable (the matrix's launcher, `--engine-python`, or $EVALHARNESS_SGLANG_PYTHON). It calls
`sglang.srt.server_args.prepare_server_args(argv)`: an unknown flag or an invalid choice ends in argparse's
SystemExit(2), whose message names the flag; the script keeps argparse's "error:" line for the report.

Environment variables: SGLang reads most through `sglang.srt.environ.Envs` (descriptors, some with a deprecated alias
name), but also many directly (`os.getenv("SGLANG_HEALTH_CHECK_TIMEOUT")` in sglang/srt/entrypoints/http_server.py,
`get_bool_env_var("SGL_FORCE_SHUTDOWN")` in sglang/srt/managers/tokenizer_manager.py, ...), and at import it rewrites
every `SGL_X` to `SGLANG_X` with a deprecation warning (sglang/srt/environ.py: _handle_deprecated_envs). So a variable
is known when Envs defines it or an alias of it, when SGLang's own source reads it by name, or when it is `SGL_X` for a
known `SGLANG_X`; one in environ's _DEPRECATED_ENVS without a replacement is refused (it does nothing any more).

`engine_versions` reads the versions that decide what works on SM120 (sglang, sglang-kernel/sgl-kernel, flashinfer,
deep_gemm (0.5.23 depends on the distribution sgl-deep-gemm) and whether it has the SM120 functions SGLang probes for,
torch, CUDA) with the engine's Python: the facts
`python -m sglang.check_env` prints, read directly (check_env lists neither deep_gemm nor its SM120 functions).
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
    import os, re
    from sglang.srt import environ
    fields = getattr(environ, "EnvField", None)
    envs = getattr(environ, "Envs", None)
    if envs is not None and fields is not None:
        found = [(n, v) for c in envs.__mro__ for n, v in vars(c).items() if isinstance(v, fields)]
        known = {n for n, _ in found} | {v.deprecated_name for _, v in found if getattr(v, "deprecated_name", None)}
        # direct reads in SGLang's own source (tests excluded: they set variables, they do not read them)
        read = re.compile(r"(?:getenv|environ\.get|environ\[|environ\.setdefault|_env_var|_env_int|_env_float|"
                          r"_env_bool|_get_env|_lazy_\w+|_GatedBool)\s*\(?\s*[\"'](SGL(?:ANG)?_[A-Z0-9_]+)[\"']")
        root = os.path.dirname(sglang.__file__)
        direct = set()
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d not in ("test", "tests", "__pycache__")]
            for name in files:
                if name.endswith(".py"):
                    with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
                        direct.update(read.findall(f.read()))
        out["env_known"] = sorted(known | direct)
        out["env_direct"] = sorted(direct - known)
        deprecated = getattr(environ, "_DEPRECATED_ENVS", {})
        out["env_deprecated"] = {n: {"replacement": getattr(d, "replacement", None), "note": getattr(d, "note", None)}
                                 for n, d in deprecated.items()}
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
    notes: list[str] = []  # accepted, but worth a line (an SGL_ name SGLang rewrites, a deprecated alias)


class SglangCheck(BaseModel):
    python: str
    version: str | None = None
    checked: bool
    reason: str | None = None  # why nothing could be checked
    cells: list[CellCheck] = []

    @property
    def failed(self) -> list[CellCheck]:
        return [c for c in self.cells if not c.ok or c.unknown_env]


def find_python(command: list[str] | None, explicit: str | None = None) -> str | None:
    """A Python that should have sglang: --engine-python, $EVALHARNESS_SGLANG_PYTHON, the cell's launcher (`command`)
    when it is a Python, else the interpreter behind that command (default `sglang`) on PATH or at its path."""
    if explicit:
        return explicit
    if os.environ.get("EVALHARNESS_SGLANG_PYTHON"):
        return os.environ["EVALHARNESS_SGLANG_PYTHON"]
    launcher = (command or ["sglang"])[0]
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


def check_cells(matrix: Matrix, cells: list[Cell], explicit_python: str | None = None,
                timeout_s: float = 600) -> SglangCheck:
    """Every SGLang cell through the installed SGLang's parser and environment, one check per launcher and
    environment: each cell is checked by the Python behind its own command, under its own environment (the matrix's
    and its axis values'), as its server would run."""
    groups: dict[tuple[str | None, str], list[Cell]] = {}
    for cell in cells:
        python = find_python(matrix.command_for(cell), explicit_python)
        groups.setdefault((python, json.dumps(cell.env, sort_keys=True)), []).append(cell)
    parts = [_check_group(matrix, members, python, timeout_s) for (python, _), members in groups.items()]
    failed = next((p for p in parts if not p.checked), None)
    if failed is not None:
        return failed
    by_id = {check.id: check for part in parts for check in part.cells}
    return SglangCheck(python=", ".join(dict.fromkeys(p.python for p in parts)),
                       version=", ".join(dict.fromkeys(p.version or "?" for p in parts)), checked=True,
                       cells=[by_id[c.id] for c in cells])


def _check_group(matrix: Matrix, cells: list[Cell], python: str | None, timeout_s: float) -> SglangCheck:
    if not python:
        return SglangCheck(python="", checked=False, reason="no Python with sglang found: pass --engine-python or "
                           "set EVALHARNESS_SGLANG_PYTHON; flags were checked for shape only")
    request = {"cells": [{"id": c.id, "argv": parser_argv(matrix, c)} for c in cells]}
    try:
        # under the cell's own environment, as its server runs: a PYTHONPATH there can be what makes the engine
        # importable (an environment whose torchvision needs a fix before it imports did: "operator torchvision::nms
        # does not exist" without it), and SGLANG_USE_CPU_ENGINE changes what the parser accepts
        proc = subprocess.run([python, "-c", CHECK_SCRIPT], input=json.dumps(request), capture_output=True,
                              text=True, timeout=timeout_s, check=False,
                              env={**os.environ, **{k: str(v) for k, v in cells[0].env.items()}})
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
    deprecated = data.get("env_deprecated") or {}
    results = []
    for cell in cells:
        verdict = data["cells"].get(cell.id, {"ok": False, "error": "not checked"})
        unknown, notes = env_verdicts(cell.env, known, deprecated)
        results.append(CellCheck(id=cell.id, ok=verdict["ok"], error=verdict.get("error"), unknown_env=unknown,
                                 notes=notes))
    return SglangCheck(python=python, version=data.get("version"), checked=True, cells=results)


def env_verdicts(env: dict[str, str], known: set[str] | None,
                 deprecated: dict[str, dict]) -> tuple[list[str], list[str]]:
    """(variables SGLang would not read, notes on ones it reads under another name) for one cell (pure).
    Only SGLANG_* and SGL_* names are judged; `known` None means the installed SGLang could not list its own."""
    unknown, notes = [], []
    if known is None:
        return unknown, notes
    for name in sorted(env):
        if not name.startswith(("SGLANG_", "SGL_")):
            continue
        if name in deprecated:
            replacement = deprecated[name].get("replacement")
            if replacement:
                notes.append(f"{name} is deprecated; SGLang forwards it to {replacement}")
            else:
                unknown.append(f"{name} (deprecated, no effect: {deprecated[name].get('note') or 'removed'})")
        elif name in known:
            continue
        elif name.startswith("SGL_") and "SGLANG_" + name[4:] in known:
            notes.append(f"{name} is rewritten to SGLANG_{name[4:]} by SGLang (deprecated prefix; rename it)")
        else:
            unknown.append(name)
    return unknown, notes


VERSIONS_SCRIPT = r"""
import importlib.metadata as md, json
out = {}
for name, dists in (("sglang", ["sglang"]), ("sgl-kernel", ["sglang-kernel", "sgl-kernel"]),
                    ("flashinfer", ["flashinfer-python", "flashinfer_python"]),
                    ("flashinfer-cubin", ["flashinfer-cubin"]),
                    ("deep_gemm", ["sgl-deep-gemm", "deep_gemm", "deep-gemm", "deepgemm"]), ("torch", ["torch"]),
                    ("triton", ["triton"]), ("transformers", ["transformers"])):
    for dist in dists:
        try:
            out[name] = md.version(dist); break
        except Exception:
            pass
try:
    import torch
    if torch.version.cuda:
        out["cuda"] = torch.version.cuda
except Exception:
    pass
try:  # sglang/srt/layers/deep_gemm_wrapper/configurer.py: _sm120_deep_gemm_apis_available
    import deep_gemm
    out["deep_gemm_sm120_functions"] = str(all(callable(getattr(deep_gemm, n, None)) for n in
        ("fp8_einsum", "m_grouped_fp8_fp4_gemm_nt_contiguous", "transform_sf_into_required_layout"))).lower()
except Exception:
    pass
print(json.dumps(out))
"""
_VERSIONS: dict[str, dict[str, str]] = {}


def engine_versions(python: str | None, timeout_s: float = 120) -> dict[str, str]:
    """Package versions in the engine's Python (read once per Python per process); {} when it cannot be run."""
    if not python:
        return {}
    if python not in _VERSIONS:
        try:
            proc = subprocess.run([python, "-c", VERSIONS_SCRIPT], capture_output=True, text=True, timeout=timeout_s,
                                  check=False)
            data = json.loads(proc.stdout.strip().splitlines()[-1])
            _VERSIONS[python] = {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}
        except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
            _VERSIONS[python] = {}
    return _VERSIONS[python]
