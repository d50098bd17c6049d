"""Every measure's spec (issue 59): its key, its matrix section, its record and its change; and reading a record
back from a CellResult's or a CellDrift's `measures` mapping. Pydantic only: the matrix and the records import it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, TypeVar

from pydantic import BaseModel, ConfigDict, Field, create_model

from evalharness.measures.calls_modes import spec as calls_modes
from evalharness.measures.prefix_cache import spec as prefix_cache

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True)
class MeasureSpec:
    key: str  # the matrix section, the phase's name and the key of its record in results.json
    title: str  # how the report and the verdict name it
    section: type[BaseModel]  # the matrix section; every section has `enabled`, off by default
    record: type[BaseModel]  # what one cell's run writes
    change: type[BaseModel]  # the cell against the reference; every change has `flagged` and `summary()`


SPECS: tuple[MeasureSpec, ...] = (
    MeasureSpec(prefix_cache.KEY, prefix_cache.TITLE, prefix_cache.PrefixCacheSection, prefix_cache.PrefixCacheRecord,
                prefix_cache.PrefixCacheChange),
    MeasureSpec(calls_modes.KEY, calls_modes.TITLE, calls_modes.CallsModesSection, calls_modes.CallsModesRecord,
                calls_modes.CallsModesChange),
)
BY_KEY = {spec.key: spec for spec in SPECS}

# every measure's section as a field of the matrix (matrix/schema.py `Matrix` derives from it): `<key>:` in a matrix
# file, off unless enabled, extra keys refused as everywhere in the schema
MeasureSections = create_model(
    "MeasureSections", __config__=ConfigDict(extra="forbid"),
    **{spec.key: (spec.section, Field(default_factory=spec.section,
                                      description=" ".join((spec.section.__doc__ or "").split())))
       for spec in SPECS})


def read(stored: Mapping[str, Any] | None, key: str, model: type[T]) -> T | None:
    """One measure's stored record (or change) as its model; None when the cell has none."""
    value = (stored or {}).get(key)
    return None if value is None else model.model_validate(value)
