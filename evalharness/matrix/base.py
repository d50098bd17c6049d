"""What every part of the matrix schema shares: strict models (extra keys refused), the name patterns, and the
"unknown name" message. Pure; imports nothing of evalharness.
"""

from __future__ import annotations

import difflib
import typing

from pydantic import BaseModel, ConfigDict

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_+-]*$"
"""Axis and value names become parts of cell ids and folder names: no dots, slashes or spaces."""
# task names become folder names under the run: no separators, so none can leave the run folder
TASK_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$"
# the length section's task and speed scenario of bucket B (issue 39): eh_long_<B>, length-<B>
LENGTH_TASK_PREFIX = "eh_long_"
LENGTH_SCENARIO_PREFIX = "length-"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")



def unknown_name(kind: str, name: str, known: typing.Iterable[str]) -> str:
    known = list(known)
    message = f"unknown {kind} {name!r}; expected one of {known}"
    close = difflib.get_close_matches(name, known, n=1)
    return message + (f" (did you mean {close[0]!r}?)" if close else "")
