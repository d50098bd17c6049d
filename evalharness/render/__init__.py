"""Renderings of a saved run: Markdown (markdown.py: escaping and tabulate tables; report.py: report.md and
summary.md; throughput.py: the throughput table, shared with `evalharness bench`), results.csv (exports.py, pandas), pareto.png (plot.py, matplotlib), all written by outputs.py.

Reads records and the analysis of them; must not import phases, serving, the runner or the command line, so an old
run re-renders without an engine or an HTTP client.
"""
