"""The report's "Engines side by side" section: for each cell served by another engine than the reference's, its
settings by meaning beside the reference's (analysis/engines.py) and what the two servers made of the same chat
requests, so that a reader can tell which differences are the engine's own. Pure; reads records and analysis only.
"""

from __future__ import annotations

from collections.abc import Mapping

from evalharness.analysis.engines import EngineComparison, engine_comparisons
from evalharness.records.engine_profile import EngineProfile
from evalharness.records.run import RunResult
from evalharness.render.markdown import markdown_table, md_text


def _value(value: object) -> str:
    return "not reported" if value is None else md_text(value, 80)


def _prompt_line(comparison: EngineComparison) -> str:
    tokens = comparison.prompt_tokens
    if tokens is None:
        return ("The same chat requests were not counted on both (no throughput scenario in common, or a run before "
                "prompts were recorded per request): whether the chat template and tokenizer agree is not measured.")
    where = (f"The same chat requests (scenarios {md_text(tokens.scenario)}, {tokens.requests} requests paired in "
             f"the order sent) came to {tokens.reference_mean:.1f} prompt tokens a request on "
             f"{md_text(comparison.reference_engine)} and {tokens.cell_mean:.1f} on {md_text(comparison.cell_engine)}")
    if not tokens.differing:
        return where + ": every prompt the same length on both, so the chat template and tokenizer agree as counted."
    return (where + f": **{tokens.differing} of {tokens.requests} prompts differ in length**: the engines built "
            "different prompts (chat template, special tokens or tokenizer), so answers and speed differ partly "
            "because the model was asked something else.")


def engines_section(run: RunResult, engines: Mapping[str, EngineProfile] | None = None) -> list[str]:
    comparisons = engine_comparisons(run, engines)
    if not comparisons:
        return []
    out = ["## Engines side by side", "",
           "Cells served by another engine than the reference's differ from it in everything the engine does "
           "(kernels, scheduler, batching, the defaults it resolves), not only in their flags. Their settings are "
           "compared by meaning here (each engine names them its own way); the verdicts above are the engines' "
           "difference with these settings.", ""]
    for comparison in comparisons:
        rows = [[s.concept, _value(s.reference), _value(s.cell),
                 "" if s.same is None else ("same" if s.same else "**differs**")]
                for s in comparison.settings if s.reference is not None or s.cell is not None]
        differ = [s.concept for s in comparison.settings if s.same is False]
        out += [f"### `{comparison.cell}` ({md_text(comparison.cell_engine)}) against the reference "
                f"({md_text(comparison.reference_engine)})", ""]
        if rows:
            out += [markdown_table(["setting", md_text(comparison.reference_engine), md_text(comparison.cell_engine),
                                    ""], rows), ""]
        out += [(f"Resolved differently by the engines: {', '.join(differ)}." if differ else
                 "Every setting both engines report resolved alike."), "", _prompt_line(comparison), ""]
    return out
