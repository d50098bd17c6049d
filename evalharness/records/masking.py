"""Secrets never reach a results file or a report: flags and variables whose names say key, token, secret or password
are masked wherever a record keeps launch settings (pure functions)."""

from __future__ import annotations

import re
from typing import Any

# whole words of a flag or variable name: HF_TOKEN, --api-key, DB_PASSWORD; not --speculative-num-draft-tokens
SECRET_NAME = re.compile(r"(^|[-_])(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)($|[-_=])", re.IGNORECASE)
MASK = "***"


def mask_env(env: dict[str, str]) -> dict[str, str]:
    return {k: (MASK if SECRET_NAME.search(k) else v) for k, v in env.items()}


def mask_args(args: dict[str, Any]) -> dict[str, Any]:
    return {k: (MASK if SECRET_NAME.search(k) and v not in (True, False, None) else v) for k, v in args.items()}


def mask_argv(argv: list[str]) -> list[str]:
    """`--api-key X` and `--hf-token=X` become `--api-key ***`: secrets never reach a results file or a report."""
    out: list[str] = []
    hide_next = False
    for item in argv:
        if hide_next and not item.startswith("--"):
            out.append(MASK)
            hide_next = False
            continue
        hide_next = False
        flag, eq, _ = item.partition("=")
        if flag.startswith("-") and SECRET_NAME.search(flag):
            if eq:
                out.append(f"{flag}={MASK}")
            else:
                out.append(item)
                hide_next = True
        else:
            out.append(item)
    return out
