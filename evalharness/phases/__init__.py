"""What the harness measures on a ready server, one module per phase: garbage probes and their detectors
(probes.py, detectors.py), distribution scoring (distribution.py), quality tasks through lm-eval (quality.py and its
worker process, _lmeval_worker.py), throughput (throughput/: client, SSE reader, statistics, HTTP client), and the
retried, tallied requests they share (retries.py; probes and distribution send theirs through the openai client,
openai_api.py).

Phases produce record types (records/) and write the per-cell files; they must not import serving, the runner,
analysis, render or the command line. They know a server only by its URLs and an `alive()` callable.
"""
