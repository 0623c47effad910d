"""Deep-equilibrium / iterative refinement: `while` on a residual norm (DEQ, Anderson)."""

import torch
import torch.nn as nn


class FixedPoint(nn.Module):
    def __init__(self, dim=8, tol=1e-3, max_iter=20):
        super().__init__()
        self.f = nn.Linear(dim, dim)
        self.tol = tol
        self.max_iter = max_iter

    def forward(self, x):
        z = torch.zeros_like(x)
        for _ in range(self.max_iter):
            z_next = torch.tanh(self.f(z) + x)
            if (z_next - z).norm() < self.tol:
                break
            z = z_next
        return z


def compile_example():
    torch.manual_seed(0)
    m = FixedPoint()
    with torch.no_grad():
        m.f.weight.mul_(0.1)
    return m, (torch.randn(3, 8),)
