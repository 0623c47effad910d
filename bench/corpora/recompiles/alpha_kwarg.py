"""A leaky activation whose slope the caller passes as a keyword (a float)."""

import torch


def leaky(x, *, slope):
    return torch.where(x > 0, x, x * slope)


def compile_example():
    torch.manual_seed(0)
    x = torch.randn(8, 8)
    return [(leaky, (x,), {"slope": s}) for s in (0.01, 0.1, 0.2)]
