"""An int the code loops over: torch unrolls the loop for each count."""

import torch
from torch import nn


class Refine(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x, steps):
        for _ in range(steps):
            x = x + torch.tanh(self.lin(x))
        return x


def compile_example():
    torch.manual_seed(0)
    model = Refine().eval()
    x = torch.randn(2, 8)
    return [(model, (x, n)) for n in (1, 2, 3)]
