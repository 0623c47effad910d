"""A training step's loss over batches of varying size (gradients too)."""

import torch
from torch import nn


class Head(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(6, 3)

    def forward(self, x, y):
        return nn.functional.cross_entropy(self.fc(x), y)


def compile_example():
    torch.manual_seed(0)
    model = Head().train()
    return [(model, (torch.randn(b, 6), torch.randint(0, 3, (b,)))) for b in (4, 6, 10)]
