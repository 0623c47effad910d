"""Sampling logits at a temperature the caller varies (a float)."""

import torch
from torch import nn


class Sampler(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(16, 10)

    def forward(self, h, temperature):
        return torch.softmax(self.proj(h) / temperature, dim=-1)


def compile_example():
    torch.manual_seed(0)
    model = Sampler().eval()
    h = torch.randn(4, 16)
    return [(model, (h, t)) for t in (0.7, 1.0, 1.3)]
