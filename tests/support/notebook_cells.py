"""Cells the notebook tests run (check on a notebook, the live kernel): each has one thing torch
reports, at a line the tests name."""

# A recompile on a Python int: torch recompiles for k = 1, then k = 2, at `return x * k` (line 2).
SCALE = """def scale(x, k):
    return x * k


fn = torch.compile(scale, backend="eager", dynamic=False)
for k in range(3):
    fn(torch.randn(4), k)"""

# Compiles cleanly: a target that ran, with nothing to report (the decorator is line 1).
CLEAN = """@torch.compile(backend="eager")
def smooth(x):
    return torch.tanh(x) + 1


smooth(torch.randn(3))"""
