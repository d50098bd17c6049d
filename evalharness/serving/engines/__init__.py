"""Engines by name. Each module owns one engine's launch argv, readiness endpoint, log knowledge and config scrape, and
what the matrix and the report must know of it (the matrix checks a file against these engines: `load_matrix`)."""

from pathlib import Path

from evalharness.matrix.load import load_matrix as _load_matrix
from evalharness.matrix.schema import Cell, Matrix
from evalharness.serving.engines._common import Engine, LaunchPlan, render_args
from evalharness.serving.engines.external import ExternalEngine
from evalharness.serving.engines.llamacpp import LlamaCppEngine
from evalharness.serving.engines.sglang import SglangEngine
from evalharness.serving.engines.transformers_serve import TransformersEngine
from evalharness.serving.engines.vllm import VllmEngine

ENGINES: dict[str, Engine] = {"sglang": SglangEngine(), "vllm": VllmEngine(), "transformers": TransformersEngine(),
                               "llamacpp": LlamaCppEngine(), "external": ExternalEngine()}



def load_matrix(path: str | Path) -> tuple[Matrix, list[Cell], Cell]:
    """Read, validate and expand a matrix file whose engines are these (matrix/load.py; SpecError when it is bad)."""
    return _load_matrix(path, ENGINES)


__all__ = ["ENGINES", "Engine", "LaunchPlan", "load_matrix", "render_args"]
