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


def positive_float(text: str) -> float:
    """argparse type: a finite number above 0 (a budget, a speed, a timeout):
    anything else exits 2 naming the option."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def unit_fraction(text: str) -> float:
    """argparse type: a number from 0 to 1 (a share, a consistency)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {text!r}")
    return value


def cell_mapping(items: list[str] | None) -> dict[str, str]:
    mapping = {}
    for item in items or []:
        run_id, sep, base_id = item.partition("=")
        mapping[run_id] = base_id if sep else run_id
    return mapping
