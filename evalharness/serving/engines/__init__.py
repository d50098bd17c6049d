"""Engines by name. Each module owns one engine's launch argv, readiness endpoint, log knowledge and config scrape."""

from evalharness.serving.engines._common import Engine, LaunchPlan, render_args
from evalharness.serving.engines.external import ExternalEngine
from evalharness.serving.engines.sglang import SglangEngine
from evalharness.serving.engines.transformers_serve import TransformersEngine
from evalharness.serving.engines.vllm import VllmEngine

ENGINES: dict[str, Engine] = {"sglang": SglangEngine(), "vllm": VllmEngine(), "transformers": TransformersEngine(),
                               "external": ExternalEngine()}

__all__ = ["ENGINES", "Engine", "LaunchPlan", "render_args"]
