"""Batch dependence (issue 39): the same greedy prompts answered alone, one request at a time, and inside a full
batch of other requests, paired per prompt; a cell whose answers change with batching more often than the
reference's is flagged. Its section's `tasks` are answered again one request at a time (phase.py, through the runner's
lm-eval runner: Served.answer_tasks) and paired with the cell's answers among concurrent requests (compare.py
`compare_run`); the report shows both here."""
