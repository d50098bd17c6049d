"""Tool calls and JSON output, whole (issues 40, 59, 60): a measure folder that is also a kind of quality task.

- The calls tasks (issue 40): answers that are not prose, tool calls through the OpenAI tools API and JSON through
  `response_format`. lm-eval sends neither `tools` nor a per-document `response_format`, so these tasks are the
  harness's own: cases (cases.py), a pure scorer per case (score.py), the requests in a worker process of their own
  (worker.py), whose records are lm-eval's per-sample rows, so drift, flips, the gate and baselines pair them like any
  task. task.py claims them for the quality phase (measures/tasks.py); tasks_report.py is their report section.
- Their check streamed and under load (issue 60, 2; matrix key and record `calls_modes`): the calls tasks' cases
  answered streamed and not, one request at a time and at the operating concurrency, each mode paired per case
  against its other mode; a cell whose valid-call rate falls under load or when streamed is flagged with its figures
  (spec, phase, compare, report, price: the roles every measure has).
"""
