"""Activation checkpointing of a block that branches on its activations' values."""

import torch
import torch.nn as nn


class GatedBlock(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.fc(x)
        if h.mean() > 0:
            h = torch.relu(h)
        return h


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = GatedBlock()
        self.out = nn.Linear(8, 1)

    def forward(self, x):
        h = self.block(x)
        return self.out(h)


def compile_example():
    torch.manual_seed(0)
    return Model(), (torch.randn(3, 8),)
