"""The original's text with the test of one branch reported as it runs: verification runs it to
learn which path each input takes (worker/paths.py). Torch-free."""

from __future__ import annotations

import ast

from .rewrite import source_lines

# The name the worker binds (in builtins, for the probe's run only) to record each test.
PROBE = "__dynamo_lens_probe__"


def probed(source: str, line: int) -> str | None:
    """``source`` with the test of the ``if``, ``while`` or ``assert`` at ``line`` wrapped in
    ``__dynamo_lens_probe__(...)``, which returns the test's truth; every other character as it
    was (the lines keep their numbers). None where no such statement starts there."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    node = next(
        (
            n
            for n in ast.walk(tree)
            if isinstance(n, (ast.If, ast.While, ast.Assert)) and n.lineno == line
        ),
        None,
    )
    if node is None or node.test.end_lineno is None or node.test.end_col_offset is None:
        return None
    lines = [ln.encode() for ln in source_lines(source)]  # the AST's columns are UTF-8 bytes
    test = node.test
    last, first = test.end_lineno - 1, test.lineno - 1  # type: ignore[operator]
    lines[last] = lines[last][: test.end_col_offset] + b")" + lines[last][test.end_col_offset :]
    lines[first] = (
        lines[first][: test.col_offset] + f"{PROBE}(".encode() + lines[first][test.col_offset :]
    )
    return b"".join(lines).decode()
