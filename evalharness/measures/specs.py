"""Every measure's spec (issue 59): its key, its matrix section, its record and its change; and reading a record
back from a CellResult's or a CellDrift's `measures` mapping. Pydantic only: the matrix and the records import it."""

from __future__ import annotations

from importlib import import_module
from typing import Any, Mapping, TypeVar

from pydantic import BaseModel, ConfigDict, Field, create_model

from evalharness.measures.catalog import MEASURES, MeasureSpec, role_module

T = TypeVar("T", bound=BaseModel)

SPECS: tuple[MeasureSpec, ...] = tuple(import_module(role_module(key, "spec")).SPEC for key in MEASURES)
BY_KEY = {spec.key: spec for spec in SPECS}

# every measure's section as a field of the matrix (matrix/schema.py `Matrix` derives from it): `<key>:` in a matrix
# file, as its section defaults it (on only for the numerics check), extra keys refused as everywhere in the schema
MeasureSections = create_model(
    "MeasureSections", __config__=ConfigDict(extra="forbid"),
    **{spec.key: (spec.section, Field(default_factory=spec.section,
                                      description=" ".join((spec.section.__doc__ or "").split())))
       for spec in SPECS})


def read(stored: Mapping[str, Any] | None, key: str, model: type[T]) -> T | None:
    """One measure's stored record (or change) as its model; None when the cell has none."""
    value = (stored or {}).get(key)
    return None if value is None else model.model_validate(value)
