"""Torch's texts and the user's source, read without torch: graph-break messages
(``breaktext``), guard failures (``guards``), tracebacks and errors placed on the user's line
(``errors``), and source ranges for a frame (``locate``).

The worker (with torch), the engine and the readers of a run's trace (without torch) share
these, so a break, a recompile or an error reads and sits the same wherever it was seen.
"""
