"""One folder per measurement (issue 59): what a measure is and where each of its parts lives.

A measure is a folder, `measures/<key>/`, that owns one kind of evidence about a served cell end to end:
- `spec.py`: its matrix section (`<key>:` in a matrix, off unless enabled but for the numerics check), the record
  one cell's run writes, and the change a cell shows against the reference (and where the measure compares the
  run's cells as one family, that comparison's model: `across`): pydantic only, on the package's records at most,
  so the matrix may read them;
- `phase.py`: how it runs against a served cell (the phases' HTTP client and retries), returning its record and the
  requests' tally; and, optionally, `skipped`: the record of a cell with nothing to ask (its engine cannot answer),
  written without a phase;
- `compare.py`: the cell's record against the reference's, by the package's shared decision rules (called, never
  copied), returning the change the decision reads (and `compare_run`, the run's cells as one family, for `across`;
  and `compare_folders`, for a measure whose figures are its files' rather than its record's);
- `report.py`: the rows it adds to report.md and report.html (or `section`, report.md's lines in its own layout);
- `price.py`: what its phase costs a launch, for `evalharness plan` (pure: its section and the plan's figures in;
  None: not priced);
- and where its folder also answers quality tasks of its own kind (catalog.py TASK_KINDS: the calls tasks), `task.py`
  (which tasks are its, the worker module that answers them, their data check, what a cell's flags mean for them)
  and `tasks_report.py` (their section of the report). phases/quality.py runs the worker a task's spec names and
  names no kind.

The package's layers reach measures through one registry per role, each built from catalog.py's keys (the role's
module of each folder, imported by its name): specs.py (the matrix's sections, the records), phases.py (the runner's
loop), comparisons.py (the drift), reports.py (the report), prices.py (the plan), tasks.py (the quality phase's
workers, the data check and `validate`). A new measure is a folder and its
key in catalog.py; nothing else in the package names it. A measure imports no other measure;
tests/unit/test_layout.py holds each role to its layer's imports and each folder to the catalog and the registries'
entries.
"""
