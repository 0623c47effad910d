"""Notebooks: a notebook's code cells as one program for the analysis (cells.py, program.py),
and the analysis's findings put back on the cells they came from (cellmap.py). Torch-free."""
