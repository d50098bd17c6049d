"""The matrix: its schema (schema.py), errors that point at the file, line and key path (errors.py), expansion into
cells (expand.py) and loading a file (load.py). Pure except load.py, which reads one file.

Must not import anything else of evalharness: an engine reads a Cell, never the other way round.
"""
