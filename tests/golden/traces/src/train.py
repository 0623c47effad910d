"""A training-step-like script whose run torch's structured trace records: graph breaks (a
data-dependent branch, a print), and a Python int that recompiles until the recompile limit.

Recorded for each torch by tests/golden/traces/record.py (see RECORDED.md)."""

import torch

torch._dynamo.config.recompile_limit = 3


def branchy(x):
    y = x * 2
    if y.sum() > 0:  # expect: graph_break GB0170
        y = y + 1
    return y


def chatty(x):
    y = x.relu()
    print("step")  # expect: graph_break GB0059
    return y * 3


def scaled(x, n):
    return x * n  # expect: recompile


if __name__ == "__main__":
    x = torch.ones(8)
    torch.compile(branchy, backend="eager")(x)
    torch.compile(chatty, backend="eager")(x)
    f = torch.compile(scaled, backend="eager", dynamic=False)
    for n in range(2, 8):
        f(x, n)
