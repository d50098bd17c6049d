"""How a per-token KL divergence figure reads (issue 26): an estimate with its interval, or why it is unavailable;
for the numerics check's section (measures/numerics/report.py) and every table that shows a KL column (Pareto,
compare, length). Pure; reads records only (records/drift.py)."""

from __future__ import annotations

from evalharness.records.drift import KLEstimate
from evalharness.render.markdown import md_text


def kl_text(est: KLEstimate | None) -> str:
    """'0.0123 [0.0101, 0.0150]', or 'unavailable: why' (the reason escaped for Markdown)."""
    return kl_plain(est, lambda reason: md_text(reason, 80))


def kl_plain(est: KLEstimate | None, escape=lambda reason: reason[:80]) -> str:
    """kl_text as plain text (for report.html, which inserts it as text)."""
    if est is None:
        return ""
    if not est.available or est.estimate is None:
        return "unavailable: " + escape(est.reason or "")
    if est.ci_low is None or est.ci_high is None:
        return (f"{kl_number(est.estimate)} ({est.contexts} context{'s' if est.contexts != 1 else ''}: too few for an "
                "interval)")
    return f"{kl_number(est.estimate)} [{kl_number(est.ci_low)}, {kl_number(est.ci_high)}]"


def kl_number(value: float) -> str:
    """Four decimals, or two significant digits below 0.001 (float-noise figures of an exact cell stay readable)."""
    return f"{value:.4f}" if value == 0 or abs(value) >= 1e-3 else f"{value:.1e}"
