"""A module that counts its calls in an int attribute and uses it: torch specialises on it."""

import torch
from torch import nn


class Warmup(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.step = 0

    def forward(self, x):
        self.step += 1
        return self.lin(x) * min(1.0, self.step / 10)


def compile_example():
    torch.manual_seed(0)
    model = Warmup().eval()
    x = torch.randn(2, 8)
    return [(model, (x,)) for _ in range(3)]
