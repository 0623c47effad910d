"""A float scale and the batch's rows both vary: two causes, each its own fix."""

import torch
from torch import nn


class Scaled(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x, scale):
        return torch.tanh(self.lin(x)) * scale


def compile_example():
    torch.manual_seed(0)
    model = Scaled().eval()
    return [(model, (torch.randn(n, 8), s)) for n, s in ((4, 0.5), (6, 1.5), (9, 2.5))]
