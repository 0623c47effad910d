"""Positions continued from an offset the caller passes (an int), as a decoder step does."""

import torch
from torch import nn


class Positions(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.freq = nn.Parameter(torch.randn(8))

    def forward(self, x, offset):
        pos = torch.arange(x.shape[1], dtype=torch.float32) + offset
        return x + torch.sin(pos[:, None] * self.freq)


def compile_example():
    torch.manual_seed(0)
    model = Positions().eval()
    x = torch.randn(2, 4, 8)
    return [(model, (x, k)) for k in (0, 4, 8)]
