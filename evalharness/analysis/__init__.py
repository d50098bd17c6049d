"""What a saved run means: drift against the reference cell (paired per sample), the Pareto front, resolved settings
that differ, the CI gate against a baseline, and the statistics under them.

Reads records only (results.json, baselines, the per-cell files): must not import phases, serving, the runner,
render or the command line, so `report` and `gate` never pull in an HTTP client or an engine.
"""
