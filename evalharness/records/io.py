"""results.json on disk: atomic writes and loading old runs; and the one reader of JSONL inputs (probes, prompts,
samples, `detect`), so each names its file and line the same way.

results.json is rewritten after every cell through a temporary file, fsync and rename, so a kill at any moment leaves
either the previous complete file or the new complete file, never a truncated one.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Callable

from pydantic import ValidationError

from evalharness.records.run import SCHEMA_VERSION, RunResult


class ResultsError(Exception):
    """A results file that is missing, unreadable or not a run of this schema."""


def read_jsonl(path: Path, error: Callable[[str], Exception], *, reading: str, line_is: str = "a JSON object",
               expected: str) -> list[tuple[int, dict]]:
    """The JSON objects of a JSONL file with their line numbers, blank lines skipped. Raises `error` with one line
    naming the file: '{path}: no such file; expected ...', '{path}: cannot read {reading}: why', or
    '{path}:{n}: not {line_is}; expected ...' for a line that is not a JSON object."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{path}: no such file; expected {expected}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"{path}: cannot read {reading}: {getattr(exc, 'strerror', None) or exc}") from None
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise error(f"{path}:{number}: not {line_is}; expected {expected}")
        rows.append((number, data))
    return rows


def atomic_write_text(path: Path, text: str) -> None:
    """Write through a temporary file in the same folder, fsync, then rename over the target."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; results are ordinary files
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def save_run(run: RunResult, out_dir: Path) -> Path:
    path = out_dir / "results.json"
    atomic_write_text(path, run.model_dump_json(indent=2) + "\n")
    return path


def load_run(out_dir: Path) -> RunResult:
    path = out_dir / "results.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultsError(f"{path}: no results here (is {out_dir} a run folder?)") from None
    except (OSError, ValueError) as exc:
        raise ResultsError(f"{path}: not readable JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ResultsError(f"{path}: not a run record (a JSON object with schema_version, meta and cells)")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ResultsError(schema_message(path, data))
    try:
        return RunResult.model_validate(data)
    except ValidationError as exc:
        raise ResultsError(f"{path}: not a valid run record: {exc.errors()[0]['loc']}: "
                           f"{exc.errors()[0]['msg']}") from None


def schema_message(path: Path, data: dict) -> str:
    """Why a results.json of another schema version cannot be read, and what would read it: no converter exists
    between versions, so the evalharness that wrote it (its version and git revision are in the file), or a re-run."""
    found = data.get("schema_version")
    meta = data.get("meta") if isinstance(data.get("meta"), dict) else {}
    wrote, revision = meta.get("harness_version"), (meta.get("git_revision") or "").removesuffix("+dirty")
    by = f"evalharness {wrote or '(version not recorded)'}" + (f" at git revision {revision}" if revision else "")
    if isinstance(found, int) and found > SCHEMA_VERSION:
        fix = f"it was written by a newer harness ({by}): upgrade evalharness to read it"
    else:
        fix = (f"no converter to schema {SCHEMA_VERSION} exists: read it with the harness that wrote it ({by}), or "
               "re-run its matrix with this one (`evalharness run`)")
    return f"{path}: results schema_version {found!r}, this harness reads {SCHEMA_VERSION}: {fix}"
