"""Batch dependence (issue 39): the same greedy prompts answered alone, one request at a time, and inside a full
batch of other requests, paired per prompt; a cell whose answers change with batching more often than the
reference's is flagged. Its section's `tasks` are answered again alone by the quality phase (analysis/loaddrift.py);
the report shows both here."""
