"""The saved record of a run: results.json, baselines and the per-cell files, with their atomic I/O.

Owns the pydantic types every phase produces and every renderer reads (run.py, measures.py, drift.py, baseline.py),
the per-cell JSONL files (cellfiles.py), atomic writes and loading old runs (io.py), secret masking (masking.py) and
run provenance (provenance.py). Must not import anything else of evalharness: reading a results.json never pulls in
an HTTP client, an engine or a phase. Field names are the results.json schema: renaming one breaks old runs.
"""
