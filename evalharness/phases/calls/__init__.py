"""Tasks whose answers are not prose: tool calls through the OpenAI tools API and JSON through `response_format`
(issue 40). lm-eval sends neither `tools` nor a per-document `response_format`, so these tasks are the harness's own:
cases (cases.py), a pure scorer per case (score.py) and the requests (worker.py), whose records are lm-eval's
per-sample rows, so drift, flips, the gate and baselines pair them like any task."""
