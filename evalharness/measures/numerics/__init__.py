"""The numerics check (issue 26): per-token KL divergence against the reference in both directions, on the
reference's and each cell's own samples at temperature 1, scored by token id (phase.py; the requests and their
parsing are phases/distribution.py's and phases/logprobs.py's, shared with the reference's echo of every cell's
samples after the cells, runner/reverse.py). Its matrix section and record keep their key, `distribution`; the
figures are computed from the cells' files (compare.py `compare_folders`, analysis/numerics.py's estimators) and
kept in each drift's `measures` as records/drift.py's DistributionDrift, which the gate, the Pareto table and the
length buckets read too (CellDrift.numerics()). On by default: the only measure that is."""
