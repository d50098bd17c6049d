"""evalharness: serve a model under each candidate engine configuration, measure it, and report what each costs."""

__version__ = "0.1.0"

# The version of what the phases measure and how they judge it (probes and detectors, distribution scoring, the
# lm-eval worker, token counting and latency statistics). It is part of every cell's settings hash, so bump it when
# such code changes what a cell's record would say: `run --resume` then re-runs the cells measured by the old code
# instead of mixing both in one report. Refactors that change no figure leave it alone.
SCORING_VERSION = 5  # 2: zero-token chunks keep their time, speculative counters read after the warm-up (issue 13)
# 3: lm-eval samples per subtask and filter, headline from the task config, reasoning and finish_reason (issue 15)
# 4: per-request seeds per repeat, aggregation and higher_is_better recorded, throughput before quality (issues 23, 24)
# 5: quality requests streamed and journaled, stop strings kept out of the reasoning, random subsets, prompt
#    hashes (issue 25); per-token KL in both directions on sampled tokens by id (issue 26)
