"""Resolved settings that differ between a cell and the reference, each marked as asked for by one of the cell's own
flags or variables, or not.

An engine that silently switches a backend (SGLang enabling NEXTN once changed the attention backend and halved the
speed, sglang#39515) shows up as a resolved difference that no flag of the cell asked for. Pure functions.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class SettingDifference(BaseModel):
    key: str
    reference: Any
    cell: Any
    asked: bool  # True when one of the cell's own flags or env vars that differ from the reference names this key


def _normal(name: str) -> str:
    return name.lstrip("-").replace("-", "_").lower()


def asked_names(cell_args: dict[str, Any], cell_env: dict[str, str], ref_args: dict[str, Any],
                ref_env: dict[str, str]) -> set[str]:
    """Normalised names of the flags and environment variables in which the cell differs from the reference."""
    names = {_normal(f) for f in set(cell_args) | set(ref_args) if cell_args.get(f) != ref_args.get(f)}
    names |= {_normal(e) for e in set(cell_env) | set(ref_env) if cell_env.get(e) != ref_env.get(e)}
    return names


def resolved_differences(
    reference: dict[str, Any], cell: dict[str, Any], asked: set[str] | None = None
) -> list[SettingDifference]:
    """Keys whose resolved value differs (a key missing on one side counts), sorted with unasked ones first."""
    asked = asked or set()
    diffs = []
    for key in sorted(set(reference) | set(cell)):
        ref_value, cell_value = reference.get(key), cell.get(key)
        if ref_value == cell_value:
            continue
        # 'args.speculative_config.method' is asked for by --speculative-config: look at every part of the key
        parts = [_normal(part) for part in key.replace("[", ".").split(".") if part]
        is_asked = any(name and (name in part or part in name) for name in asked for part in parts)
        diffs.append(SettingDifference(key=key, reference=ref_value, cell=cell_value, asked=is_asked))
    return sorted(diffs, key=lambda d: (d.asked, d.key))
