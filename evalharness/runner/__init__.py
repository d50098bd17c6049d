"""Running a matrix: the run loop with resume and saving (run.py), one cell through its phases (cell.py), a cell
folder's settings and setting aside stale ones (cellfolders.py), signals (signals.py) and the progress line
(progress.py).

May import phases, serving, analysis (drift after each cell), render (the renderings after each save), records and
matrix; must not import the command line.
"""
