"""What every command shares: the exit status for bad input and the one-line message that goes with it, and the
parsers of list-valued options."""

from __future__ import annotations

import argparse
import sys



EXIT_BAD_INPUT = 2


def fail(message: str) -> int:
    print(f"evalharness: error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def int_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def cell_mapping(items: list[str] | None) -> dict[str, str]:
    mapping = {}
    for item in items or []:
        run_id, sep, base_id = item.partition("=")
        mapping[run_id] = base_id if sep else run_id
    return mapping
