"""An int count the code uses as a size: torch specialises on it, and a 0-d tensor cannot be a
size."""

import torch
from torch import nn


class Tile(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x, copies):
        return self.lin(x).repeat(copies, 1)


def compile_example():
    torch.manual_seed(0)
    model = Tile().eval()
    x = torch.randn(2, 8)
    return [(model, (x, n)) for n in (2, 3, 4)]
