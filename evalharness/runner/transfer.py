"""A cell folder as bytes, both ways between the Ray driver and the node that runs the cell: the reference's files
and an interrupted cell's own folder go out with the task, the cell's folder (server log, probes, samples, request
caches) comes back in its return value, so nothing needs a file system shared by the nodes.

Pure file handling: imports nothing of evalharness. Unpacking refuses links and any path that would leave the folder.
"""

from __future__ import annotations

import io
import os
import shutil
import tarfile
import uuid
from pathlib import Path

# never shipped: a live server's pid file belongs to the machine it was written on (its orphan sweep reads it there)
SKIP = {"server.pid"}


def pack(folder: Path, only: set[str] | None = None, also_named: set[str] | None = None) -> bytes:
    """A gzip'd tar of `folder`'s files (paths relative to it); `only`: just these top-level names, and files of
    these names anywhere below (`also_named`: a reference's samples.jsonl, not its request caches). b'' when the
    folder does not exist."""
    if not folder.is_dir():
        return b""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=3) as tar:
        for path in sorted(folder.rglob("*")):
            rel = path.relative_to(folder)
            wanted = only is None or rel.parts[0] in only or rel.name in (also_named or set())
            if rel.name in SKIP or not wanted or path.is_symlink():
                continue
            if path.is_file():
                tar.add(path, arcname=str(rel), recursive=False)
    return buffer.getvalue()


class UnsafeArchive(ValueError):
    """An archive member that is a link, a device, or a path leaving the destination."""


def _check(member: tarfile.TarInfo) -> None:
    parts = Path(member.name).parts
    if member.name.startswith("/") or ".." in parts or not (member.isfile() or member.isdir()):
        raise UnsafeArchive(f"refusing archive member {member.name!r}")


def unpack(data: bytes, dest: Path) -> None:
    """Extract what `pack` made into `dest` (created), merging with what is there."""
    dest.mkdir(parents=True, exist_ok=True)
    if not data:
        return
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        members = tar.getmembers()
        for member in members:
            _check(member)
        if hasattr(tarfile, "data_filter"):  # Python 3.10.12+/3.11.4+: the standard library's own guard as well
            tar.extractall(dest, members=members, filter="data")
        else:  # pragma: no cover - older patch releases; the members were checked above
            tar.extractall(dest, members=members)


def replace_folder(data: bytes, folder: Path) -> None:
    """Put the archive's contents in place of `folder`: unpacked beside it first, then swapped in by renames, so an
    interrupted swap leaves either the old folder or the new one, never half of each."""
    parent = folder.parent
    parent.mkdir(parents=True, exist_ok=True)
    tag = uuid.uuid4().hex[:8]
    incoming, old = parent / f".{folder.name}.incoming-{tag}", parent / f".{folder.name}.old-{tag}"
    try:
        unpack(data, incoming)
        if folder.exists():
            os.rename(folder, old)
        os.rename(incoming, folder)
    finally:
        shutil.rmtree(incoming, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
