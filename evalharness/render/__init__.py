"""Renderings of a saved run: Markdown (markdown.py: escaping and tabulate tables; report.py: report.md and
summary.md; throughput.py: the throughput table, shared with `evalharness bench`; load.py: speed by load),
results.csv (exports.py, pandas), pareto.png and curves.png (plot.py, matplotlib: throughput against drift, and each
cell's load sweep as throughput per GPU against interactivity), all written by outputs.py.

Reads records and the analysis of them; must not import phases, serving, the runner or the command line, so an old
run re-renders without an engine or an HTTP client.
"""
