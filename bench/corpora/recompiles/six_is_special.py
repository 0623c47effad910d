"""The code branches on the row count: a dynamic size there would need both branches."""

import torch
from torch import nn


class Special(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        if x.size(0) == 6:
            return self.lin(x) + 1
        return self.lin(x)


def compile_example():
    torch.manual_seed(0)
    model = Special().eval()
    return [(model, (torch.randn(n, 8),)) for n in (4, 6, 8)]
