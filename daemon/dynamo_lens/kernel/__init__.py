"""The live kernel: ``%load_ext dynamo_lens`` switches torch's structured trace on inside a
running IPython or Jupyter kernel (capture.py), reads each cell's part of it into findings
named by the cell's execution count (cellfindings.py), and shows a summary under the cell
(summary.py). extension.py holds IPython's hooks and the ``%dynamo_lens`` magic."""
